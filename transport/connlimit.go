package transport

import (
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport/internal/sampledlog"
	"github.com/floedb/floe/transport/pb"
)

// The DRPC connections a Listener hands to its Server are bounded by
// ListenerConfig.MaxConns. The bound is checked when a connection is
// claimed, after its prefix, and never makes the accept loop wait: waiting
// (as netutil.LimitListener does) would leave new connections, Raft's among
// them, unread in the kernel's backlog. A connection past the bound is
// refused instead, in a way a DRPC client can read: the answer to its first
// call is UNAVAILABLE naming the limit and its flag (a client that sends no
// call within refusalLinger is just closed). Raft connections are
// not counted here; they have a share of their own (raftconns.go).

// Refusals are answered by goroutines of their own, at most maxRefusals at
// once (beyond that a refused connection is just closed), each for at most
// refusalLinger: long enough for the client to read the answer before the
// connection closes.
const (
	maxRefusals     = 64
	refusalLinger   = time.Second
	refusalMaxDrain = 64 << 10 // bytes of the refused client's request read and dropped
)

// connCap counts a protocol's connections and refuses those past max.
type connCap struct {
	max     int
	log     *slog.Logger
	refused sampledlog.Log

	mu        sync.Mutex
	open      int
	refusing  map[net.Conn]struct{} // refusals being answered
	closed    bool
	answering sync.WaitGroup
}

func newConnCap(maxConns int, logger *slog.Logger) *connCap {
	return &connCap{max: maxConns, log: logger, refusing: make(map[net.Conn]struct{})}
}

// admit counts conn in, or refuses it when max are open already.
func (c *connCap) admit(conn net.Conn) (net.Conn, bool) {
	c.mu.Lock()
	if c.open < c.max {
		c.open++
		c.mu.Unlock()
		return &cappedConn{Conn: conn, cap: c}, true
	}
	answer := !c.closed && len(c.refusing) < maxRefusals
	if answer {
		c.refusing[conn] = struct{}{}
		c.answering.Add(1)
	}
	c.mu.Unlock()
	if suppressed, ok := c.refused.Allow(); ok {
		c.log.Warn("refusing DRPC connection: the node serves its limit of connections already",
			"remote_addr", conn.RemoteAddr().String(), "max_rpc_conns", c.max, "flag", maxConnsFlag, "suppressed", suppressed)
	}
	if !answer {
		_ = conn.Close()
		return nil, false
	}
	go func() {
		defer c.answering.Done()
		answerFirstCall(conn, Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
			"the node serves its limit of %d DRPC connections (%s); try again later", c.max, maxConnsFlag))
		c.mu.Lock()
		delete(c.refusing, conn)
		c.mu.Unlock()
	}()
	return nil, false
}

// answerFirstCall fails every call the client starts on conn with refusal,
// for refusalLinger, reading at most refusalMaxDrain bytes; then closes.
// Each invoke is answered as it arrives: answering before it would reach a
// client whose call has not started, which then sees only the connection
// close. The connection stays open until the client closes it or the
// linger runs out: DRPC cancels a call whose connection ends, even one that
// has just received its error, and the caller would see only "canceled";
// and a client that takes the connection for another call before it
// learns of the refusal gets the refusal again, not a lost connection.
func answerFirstCall(conn net.Conn, refusal error) {
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(refusalLinger)); err != nil {
		return
	}
	rd := drpcwire.NewReaderWithOptions(io.LimitReader(conn, refusalMaxDrain),
		drpcwire.ReaderOptions{MaximumBufferSize: refusalMaxDrain})
	for {
		pkt, err := rd.ReadPacket()
		if err != nil {
			return
		}
		if pkt.Kind != drpcwire.KindInvoke {
			continue
		}
		if _, err := conn.Write(errorFrame(pkt.ID.Stream, refusal)); err != nil {
			return
		}
	}
}

// release counts a connection out.
func (c *connCap) release() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
}

// close cuts the refusals being answered short and waits for them.
func (c *connCap) close() {
	c.mu.Lock()
	c.closed = true
	for conn := range c.refusing {
		_ = conn.Close()
	}
	c.mu.Unlock()
	c.answering.Wait()
}

// cappedConn is a connection counted by a connCap until it closes.
type cappedConn struct {
	net.Conn
	cap  *connCap
	once sync.Once
}

// NetConn returns the connection counted.
func (c *cappedConn) NetConn() net.Conn { return c.Conn }

// Close closes the connection and counts it out.
func (c *cappedConn) Close() error {
	c.once.Do(c.cap.release)
	return c.Conn.Close()
}
