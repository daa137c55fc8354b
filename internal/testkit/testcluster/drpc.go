package testcluster

import (
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
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
	replies map[uint64]*replyFault   // by stream: what to do with the node's answer
	writes  map[uint64]*writesStream // by stream: the client write streams (RPCWrites)
	fetches map[uint64]*fetchStream  // by stream: the follower fetch streams (RPCFetches)
}

// fetchStream is a follower's stream of fetches (Tablet.Fetches) passing
// the proxy: each fetch on it counts as an RPCFetch call of its caller and
// is delayed or held as one. Only holds are armed for nodes' calls (see
// Hold), so nothing on the way back changes.
type fetchStream struct {
	from Caller
	msg  []byte // the frames of the fetch being gathered
}

// writesStream is a client's ordered write stream (Tablet.Writes) passing
// the proxy: each call on it counts as an RPCProduce or RPCPutKV call and
// meets the faults armed for those, one by one.
type writesStream struct {
	call, callRaw []byte // the caller's message being gathered, and its frames
	reply         []byte // the node's message being gathered
	replyMsg      uint64 // its message id from the node
	nodeMsg       uint64 // the node's packet being passed on, by its id
	lose          map[uint64]*fault
	// sent is the last message id the proxy used toward the caller on the
	// stream (under callerMu): it numbers the node's packets and its own
	// answers alike, in the order they go out.
	sent uint64
}

// replyFault is what happens to the node's answer to one call.
type replyFault struct {
	f       *fault
	replied bool   // loseReply: the error went out; the rest of the answer is dropped
	msg     []byte // rewriteReply: the message gathered so far
	done    bool   // rewriteReply: the message went out rewritten
}

func newDRPCConn(p *Proxy, pc *proxyConn) *drpcConn {
	return &drpcConn{p: p, pc: pc, replies: map[uint64]*replyFault{}, writes: map[uint64]*writesStream{},
		fetches: map[uint64]*fetchStream{}}
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
			if rpc == RPCWrites && from == FromClients {
				c.mu.Lock()
				c.writes[fr.ID.Stream] = &writesStream{lose: map[uint64]*fault{}}
				c.mu.Unlock()
			}
			if rpc == RPCFetches {
				c.mu.Lock()
				c.fetches[fr.ID.Stream] = &fetchStream{from: from}
				c.mu.Unlock()
			}
			if _, err := c.pc.node.Write(out); err != nil {
				return
			}
			continue
		case drpcwire.KindMessage:
			c.mu.Lock()
			ws, fs := c.writes[fr.ID.Stream], c.fetches[fr.ID.Stream]
			c.mu.Unlock()
			switch {
			case ws != nil:
				if !c.writeCall(ws, fr, raw) {
					return
				}
				continue
			case fs != nil:
				if !c.fetchCall(fs, fr, raw) {
					return
				}
				continue
			}
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
	for s := range c.writes {
		if s < stream {
			delete(c.writes, s)
		}
	}
	for s := range c.fetches {
		if s < stream {
			delete(c.fetches, s)
		}
	}
	c.mu.Unlock()
	if f == nil {
		return true
	}
	switch f.kind {
	case holdCall:
		return c.awaitRelease(f)
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

// writeCall passes on one frame of a client write stream: once a call's
// message is whole, the faults armed for its kind decide what becomes of
// it. False: the connection is gone.
func (c *drpcConn) writeCall(ws *writesStream, fr drpcwire.Frame, raw []byte) bool {
	ws.call = append(ws.call, fr.Data...)
	ws.callRaw = append(ws.callRaw, raw...)
	if !fr.Done {
		return true
	}
	data, out := ws.call, ws.callRaw
	ws.call, ws.callRaw = nil, nil
	var call pb.WriteCall
	if err := proto.Unmarshal(data, &call); err != nil {
		_, err := c.pc.node.Write(out) // the node says what is wrong with it
		return err == nil
	}
	rpc := RPCProduce
	if call.GetPutKv() != nil {
		rpc = RPCPutKV
	}
	f, delay := c.p.callArrived(rpc, FromClients)
	if delay > 0 && !c.sleep(delay) {
		return false
	}
	switch {
	case f == nil:
	case f.kind == holdCall:
		if !c.awaitRelease(f) {
			return false
		}
	case f.kind == failCall:
		res := &pb.WriteResult{Id: call.Id, ErrorCode: f.code, ErrorMessage: fmt.Sprintf("testcluster: injected %v", f.code)}
		return c.writeResult(ws, fr.ID.Stream, res) == nil
	case f.kind == loseReply:
		c.mu.Lock()
		ws.lose[call.Id] = f
		c.mu.Unlock()
	}
	_, err := c.pc.node.Write(out)
	return err == nil
}

// fetchCall passes on one frame of a fetch stream: once a fetch is whole,
// it waits out the proxy's delay and any hold armed for RPCFetch calls of
// its caller, then goes to the node. False: the connection is gone.
func (c *drpcConn) fetchCall(fs *fetchStream, fr drpcwire.Frame, raw []byte) bool {
	fs.msg = append(fs.msg, raw...)
	if !fr.Done {
		return true
	}
	out := fs.msg
	fs.msg = nil
	f, delay := c.p.callArrived(RPCFetch, fs.from)
	if delay > 0 && !c.sleep(delay) {
		return false
	}
	if f != nil && f.kind == holdCall && !c.awaitRelease(f) {
		return false
	}
	_, err := c.pc.node.Write(out)
	return err == nil
}

// awaitRelease waits until the hold f is released; false: the connection
// or the proxy closed first.
func (c *drpcConn) awaitRelease(f *fault) bool {
	select {
	case <-f.release:
		return true
	case <-c.pc.closed:
	case <-c.p.done:
	}
	return false
}

// writeResult sends the caller one whole result message on a write stream,
// under the next message id.
func (c *drpcConn) writeResult(ws *writesStream, stream uint64, res *pb.WriteResult) error {
	data, err := proto.Marshal(res)
	if err != nil {
		return err
	}
	c.callerMu.Lock()
	defer c.callerMu.Unlock()
	ws.sent++
	frame := drpcwire.Frame{ID: drpcwire.ID{Stream: stream, Message: ws.sent}, Kind: drpcwire.KindMessage, Done: true, Data: data}
	_, err = c.pc.caller.Write(drpcwire.AppendFrame(nil, frame))
	return err
}

// writeReply passes one frame of the node's on a client write stream: a
// result whose call a fault caught is replaced by the fault's error, and
// every packet goes out under the stream's next message id (the proxy's
// own answers take ids too).
func (c *drpcConn) writeReply(ws *writesStream, fr drpcwire.Frame) error {
	if fr.Kind != drpcwire.KindMessage {
		c.callerMu.Lock()
		defer c.callerMu.Unlock()
		if fr.ID.Message != ws.nodeMsg {
			ws.nodeMsg = fr.ID.Message
			ws.sent++
		}
		fr.ID.Message = ws.sent
		_, err := c.pc.caller.Write(drpcwire.AppendFrame(nil, fr))
		return err
	}
	if fr.ID.Message != ws.replyMsg {
		ws.reply, ws.replyMsg = ws.reply[:0], fr.ID.Message
	}
	ws.reply = append(ws.reply, fr.Data...)
	if !fr.Done {
		return nil
	}
	var res pb.WriteResult
	if err := proto.Unmarshal(ws.reply, &res); err != nil {
		return fmt.Errorf("testcluster: proxy: a write result the node sent: %w", err)
	}
	c.mu.Lock()
	f := ws.lose[res.Id]
	delete(ws.lose, res.Id)
	c.mu.Unlock()
	if f != nil {
		res = pb.WriteResult{Id: res.Id, ErrorCode: f.code, ErrorMessage: fmt.Sprintf("testcluster: injected %v", f.code)}
	}
	return c.writeResult(ws, fr.ID.Stream, &res)
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
		ws := c.writes[fr.ID.Stream]
		c.mu.Unlock()
		if ws != nil {
			if c.writeReply(ws, fr) != nil {
				return
			}
			continue
		}
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
