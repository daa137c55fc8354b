package testcluster

import (
	"fmt"
	"io"
	"sync"
	"time"

	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport"
)

// drpcConn pumps one DRPC connection frame by frame. A DRPC connection
// carries one call (stream) at a time: the caller sends its metadata,
// invoke, message and close-send frames, the node its answer's frames, all
// tagged with the stream id. The proxy decides what to do with a call when
// its invoke frame arrives.
type drpcConn struct {
	p  *Proxy
	pc *proxyConn

	callerMu sync.Mutex // serializes writes to the caller

	mu      sync.Mutex
	replies map[uint64]*replyFault // by stream: what to do with the node's answer
}

// replyFault is what happens to the node's answer to one call.
type replyFault struct {
	f       *fault
	replied bool   // loseReply: the error went out; the rest of the answer is dropped
	msg     []byte // rewriteReply: the message gathered so far
	done    bool   // rewriteReply: the message went out rewritten
}

func newDRPCConn(p *Proxy, pc *proxyConn) *drpcConn {
	return &drpcConn{p: p, pc: pc, replies: map[uint64]*replyFault{}}
}

// frameReader reads whole frames, each with its bytes on the wire.
type frameReader struct {
	r   io.Reader
	buf []byte
	off int
}

func (fr *frameReader) next() (drpcwire.Frame, []byte, error) {
	for {
		rem, frame, ok, err := drpcwire.ParseFrame(fr.buf[fr.off:])
		if err != nil {
			return drpcwire.Frame{}, nil, fmt.Errorf("testcluster: proxy: %w", err)
		}
		if ok {
			start := fr.off
			fr.off = len(fr.buf) - len(rem)
			return frame, fr.buf[start:fr.off], nil
		}
		if fr.off > 0 {
			fr.buf = append(fr.buf[:0], fr.buf[fr.off:]...)
			fr.off = 0
		}
		if cap(fr.buf)-len(fr.buf) < 4096 {
			fr.buf = append(fr.buf, make([]byte, 4096+cap(fr.buf))...)[:len(fr.buf)]
		}
		n, err := fr.r.Read(fr.buf[len(fr.buf):cap(fr.buf)])
		fr.buf = fr.buf[:len(fr.buf)+n]
		if n == 0 && err != nil {
			return drpcwire.Frame{}, nil, err
		}
	}
}

// pumpCalls forwards the caller's frames to the node, applying the faults
// armed for each call. It returns when either side closes.
func (c *drpcConn) pumpCalls() {
	rd := &frameReader{r: c.pc.caller}
	var (
		pending   []byte // frames of the next call held until its invoke
		fromNode  bool   // the next call carries a cluster id
		dropped   uint64 // a stream refused at the proxy: its frames go nowhere
		hasDrop   bool
		invokeBuf []byte // an invoke split over frames
	)
	for {
		fr, raw, err := rd.next()
		if err != nil {
			return
		}
		if hasDrop && fr.ID.Stream == dropped {
			continue
		}
		switch fr.Kind {
		case drpcwire.KindInvokeMetadata:
			pending = append(pending, raw...)
			if md, err := drpcmetadata.Decode(fr.Data); err == nil && md[transport.MetadataClusterID] != "" {
				fromNode = true
			}
			continue
		case drpcwire.KindInvoke:
			pending = append(pending, raw...)
			invokeBuf = append(invokeBuf, fr.Data...)
			if !fr.Done {
				continue
			}
			rpc := string(invokeBuf)
			from := FromClients
			if fromNode {
				from = FromNodes
			}
			out := pending
			pending, invokeBuf, fromNode = nil, nil, false
			if !c.startCall(fr.ID.Stream, rpc, from) {
				dropped, hasDrop = fr.ID.Stream, true
				continue
			}
			if _, err := c.pc.node.Write(out); err != nil {
				return
			}
			continue
		}
		if _, err := c.pc.node.Write(raw); err != nil {
			return
		}
	}
}

// startCall applies what the proxy does to a new call: delay, hold, fail
// at once, or arm a fault on its answer. False: the call goes no further.
func (c *drpcConn) startCall(stream uint64, rpc string, from Caller) bool {
	f, delay := c.p.callArrived(rpc, from)
	if delay > 0 && !c.sleep(delay) {
		return false
	}
	c.mu.Lock()
	for s := range c.replies {
		if s < stream {
			delete(c.replies, s)
		}
	}
	c.mu.Unlock()
	if f == nil {
		return true
	}
	switch f.kind {
	case holdCall:
		select {
		case <-f.release:
			return true
		case <-c.pc.closed:
		case <-c.p.done:
		}
		return false
	case failCall:
		// The answer's message id starts at 1 on every stream.
		_ = c.writeError(drpcwire.ID{Stream: stream, Message: 1}, f)
		return false
	default: // loseReply, rewriteReply
		c.mu.Lock()
		c.replies[stream] = &replyFault{f: f}
		c.mu.Unlock()
		return true
	}
}

// sleep waits d unless the connection closes first.
func (c *drpcConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.pc.closed:
		return false
	}
}

// writeError sends the caller an error frame with f's code, as the node's
// transport would send a handler's error.
func (c *drpcConn) writeError(id drpcwire.ID, f *fault) error {
	err := transport.ToWire(transport.Errorf(f.code, "testcluster: injected %v", f.code))
	frame := drpcwire.Frame{ID: id, Kind: drpcwire.KindError, Done: true, Data: drpcwire.MarshalError(err)}
	return c.writeCaller(drpcwire.AppendFrame(nil, frame))
}

func (c *drpcConn) writeCaller(b []byte) error {
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	_, err := c.pc.caller.Write(b)
	return err
}

// pumpReplies forwards the node's frames to the caller, replacing or
// rewriting the answers of the calls a fault caught.
func (c *drpcConn) pumpReplies() {
	rd := &frameReader{r: c.pc.node}
	for {
		fr, raw, err := rd.next()
		if err != nil {
			return
		}
		c.mu.Lock()
		rf := c.replies[fr.ID.Stream]
		c.mu.Unlock()
		out := raw
		switch {
		case rf == nil:
		case rf.f.kind == loseReply:
			if rf.replied {
				continue
			}
			rf.replied = true
			if c.writeError(fr.ID, rf.f) != nil {
				return
			}
			continue
		case rf.f.kind == rewriteReply && !rf.done && fr.Kind == drpcwire.KindMessage:
			rf.msg = append(rf.msg, fr.Data...)
			if !fr.Done {
				continue
			}
			rf.done = true
			out = drpcwire.AppendFrame(nil, drpcwire.Frame{ID: fr.ID, Kind: drpcwire.KindMessage, Done: true,
				Data: rf.f.rewrite(rf.msg)})
		}
		if c.writeCaller(out) != nil {
			return
		}
	}
}
