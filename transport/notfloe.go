package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"storj.io/drpc/drpcwire"
)

// ErrNotFloe matches a NotFloeError: the address accepts connections but
// what answers there is not a Floe node.
var ErrNotFloe = pkgerr.New("transport", "not a Floe node")

// NotFloeError is an address that accepted a connection but did not answer
// in Floe's RPC protocol: another service on that port (an HTTP server, a
// node's own --http port, a TLS endpoint), or, with Silence set, something
// that sent nothing at all in that time. Retrying does not help, so it is
// not retriable; it matches ErrNotFloe.
type NotFloeError struct {
	Addr string
	// Answer is the start of what the address sent; empty when it sent
	// nothing.
	Answer []byte
	// Silence is how long the address stayed silent (0: it answered
	// Answer).
	Silence time.Duration
}

func (e *NotFloeError) Error() string {
	if e.Silence > 0 {
		return fmt.Sprintf("%s is not a Floe node, or a stalled one: it accepted the connection but answered nothing within %v (an HTTP port, such as a node's --http, stays silent)",
			e.Addr, e.Silence)
	}
	return fmt.Sprintf("%s is not a Floe node: it answered %q, not Floe's RPC protocol (another service on that port?)",
		e.Addr, e.Answer)
}

// Is makes a NotFloeError match ErrNotFloe.
func (e *NotFloeError) Is(target error) bool { return target == ErrNotFloe }

// sniffAnswerBytes is how much of a foreign answer a NotFloeError quotes.
const sniffAnswerBytes = 48

// errForeignAnswer ends a connection whose peer does not speak DRPC, so
// the call on it fails at once instead of waiting for a frame that never
// comes (an HTTP server's answer parses as the start of a frame gigabytes
// long).
var errForeignAnswer = pkgerr.New("transport", "the peer does not speak Floe's RPC protocol")

// sniffConn checks the first byte a freshly dialed peer sends. Every DRPC
// frame starts with a byte whose kind bits name one of DRPC's seven packet
// kinds; every printable ASCII byte (an HTTP, SMTP or Redis answer, an SSH
// banner) and a TLS record's first byte name none, so the first byte tells
// a Floe node from another service.
type sniffConn struct {
	net.Conn
	checked atomic.Bool // the first byte has been seen

	mu      sync.Mutex
	foreign []byte // the start of a foreign answer; nil while none
}

// Read reads from the connection and, on its first bytes, checks them; a
// foreign answer fails the read. Only DRPC's reader goroutine reads.
func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n == 0 || c.checked.Load() {
		return n, err
	}
	c.checked.Store(true)
	if isDRPCFrameStart(p[0]) {
		return n, err
	}
	c.mu.Lock()
	c.foreign = append([]byte(nil), p[:min(n, sniffAnswerBytes)]...)
	c.mu.Unlock()
	return 0, errForeignAnswer
}

// foreignAnswer returns the start of what a peer that does not speak DRPC
// sent, nil when the peer has sent nothing or speaks DRPC.
func (c *sniffConn) foreignAnswer() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.foreign
}

// isDRPCFrameStart reports whether b can be the first byte of a DRPC frame:
// its kind bits (drpcwire.ParseFrame) name a packet kind.
func isDRPCFrameStart(b byte) bool {
	kind := drpcwire.Kind((b & 0b01111110) >> 1)
	return kind >= drpcwire.KindInvoke && kind <= drpcwire.KindInvokeMetadata
}

// ProbeDial opens and closes a TCP connection to addr, within timeout, to
// tell an address that accepts connections (nil) from one where nothing
// listens or that cannot be reached (the dial's error): a call that got no
// answer says nothing about which.
func ProbeDial(ctx context.Context, addr string, timeout time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err == nil {
		conn.Close()
	}
	return err
}
