package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"time"

	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/internal/sampledlog"
	"github.com/floedb/floe/transport/pb"
)

// TLS comes before the protocol prefix: on a port with
// ListenerConfig.TLS, every connection is a TLS connection whose first 8
// bytes inside are the prefix. The handshake runs where the prefix is read
// (the mux's goroutine for that connection), so it is bounded like a
// prefix: by HandshakeTimeout and MaxPendingConns, and never delays the
// accept loop.
//
// Either side of a mismatch says what is wrong instead of hanging or
// closing silently:
//   - a plaintext DRPC client on a TLS port gets its first call failed
//     with UNAUTHENTICATED, "this node requires TLS", and the node logs
//     the refusal;
//   - a plaintext Raft dialer gets rafnet's "requires TLS" answer byte
//     (RaftTLSRequired), and the node logs;
//   - a TLS client on a plaintext port gets a TLS alert (protocol
//     version), which the pool reports as "the node does not use TLS", and
//     the node logs.

// tlsRecordHandshake is the first byte of every TLS connection: a record of
// content type handshake (the ClientHello).
const tlsRecordHandshake = 0x16

// RaftTLSRequired is the byte a TLS port answers a plaintext Raft dialer
// with, after its prefix: a Raft handshake answer that is neither OK nor
// silence, so the dialer can say why.
const RaftTLSRequired = byte(0x15)

// tlsAlertProtocolVersion is a TLS 1.2-framed fatal alert, protocol_version
// (70): what a plaintext port answers a TLS ClientHello with. Go's client
// reports "remote error: tls: protocol version not supported".
var tlsAlertProtocolVersion = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46}

// tlsPort wraps a TCP listener's connections in serverTLSConns.
type tlsPort struct {
	net.Listener
	cfg     *tls.Config
	log     *slog.Logger
	refused *sampledlog.Log
	failed  *sampledlog.Log
}

// Accept returns the next connection, its handshake not done yet.
func (p *tlsPort) Accept() (net.Conn, error) {
	conn, err := p.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverTLSConn{raw: conn, port: p}, nil
}

// serverTLSConn is a connection accepted on a TLS port. Its first read
// looks at the first byte: a TLS record starts the handshake; anything else
// is a plaintext caller, refused in words it can read.
type serverTLSConn struct {
	raw  net.Conn
	port *tlsPort

	once sync.Once
	tls  *batchedTLS // set by start when the caller speaks TLS
	err  error       // why the connection cannot be used; set by start
}

// start runs once, on the first read or write.
func (c *serverTLSConn) start() {
	var first [1]byte
	if _, err := io.ReadFull(c.raw, first[:]); err != nil {
		c.err = err
		return
	}
	if first[0] != tlsRecordHandshake {
		c.err = c.refusePlaintext(first[0])
		return
	}
	c.tls = newBatchedTLS(&replayConn{Conn: c.raw, head: first[:]}, func(conn net.Conn) *tls.Conn {
		return tls.Server(conn, c.port.cfg)
	})
	if err := c.tls.Handshake(); err != nil {
		if suppressed, ok := c.port.failed.Allow(); ok {
			c.port.log.Warn("TLS handshake failed", "remote_addr", c.raw.RemoteAddr().String(), "error", err,
				"suppressed", suppressed)
		}
		c.err = pkgerr.Errorf("transport", "TLS handshake with %s: %w", c.raw.RemoteAddr(), err)
	}
}

// errPlaintext is why a plaintext connection to a TLS port ends.
var errPlaintext = pkgerr.New("transport", "plaintext connection to a TLS port")

// refusePlaintext answers a caller that did not start with TLS: a DRPC
// client's first call is failed with UNAUTHENTICATED, a Raft dialer gets
// RaftTLSRequired, anything else is just closed.
func (c *serverTLSConn) refusePlaintext(first byte) error {
	prefix := make([]byte, prefixBytes)
	prefix[0] = first
	_ = c.raw.SetReadDeadline(time.Now().Add(refusalLinger))
	if _, err := io.ReadFull(c.raw, prefix[1:]); err != nil {
		return errPlaintext
	}
	what := "unknown protocol"
	switch string(prefix) {
	case drpcmigrate.DRPCHeader:
		what = "DRPC"
		answerFirstCall(c.raw, Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED,
			"this node requires TLS: connect with the cluster's CA (--tls-ca)"))
	case RaftHeader:
		what = "Raft"
		_ = c.raw.SetWriteDeadline(time.Now().Add(refusalLinger))
		_, _ = c.raw.Write([]byte{RaftTLSRequired})
	}
	if suppressed, ok := c.port.refused.Allow(); ok {
		c.port.log.Warn("refusing a plaintext connection: this port requires TLS",
			"remote_addr", c.raw.RemoteAddr().String(), "protocol", what, "suppressed", suppressed)
	}
	return errPlaintext
}

func (c *serverTLSConn) Read(p []byte) (int, error) {
	c.once.Do(c.start)
	if c.err != nil {
		return 0, c.err
	}
	return c.tls.Read(p)
}

func (c *serverTLSConn) Write(p []byte) (int, error) {
	c.once.Do(c.start)
	if c.err != nil {
		return 0, c.err
	}
	return c.tls.Write(p)
}

// Close closes the TCP connection. No close_notify is sent: it could block
// on a peer that reads nothing, and DRPC and Raft frame their own ends.
func (c *serverTLSConn) Close() error { return c.raw.Close() }

func (c *serverTLSConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *serverTLSConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *serverTLSConn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *serverTLSConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *serverTLSConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// ConnectionState returns the TLS state once the handshake is done; the zero
// state before, or when the connection is not TLS.
func (c *serverTLSConn) ConnectionState() tls.ConnectionState {
	if c.tls == nil {
		return tls.ConnectionState{}
	}
	return c.tls.ConnectionState()
}

// replayConn reads head before the connection's own bytes.
type replayConn struct {
	net.Conn
	head []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// TLSState is implemented by the connections of a TLS port, as a protocol's
// listener hands them out (the Raft stream layer checks its peers with it).
type TLSState interface {
	ConnectionState() tls.ConnectionState
}

// looksLikeTLS reports whether a connection's first bytes are a TLS
// ClientHello record (content type handshake, version 3.x).
func looksLikeTLS(prefix []byte) bool {
	return len(prefix) >= 2 && prefix[0] == tlsRecordHandshake && prefix[1] == 0x03
}

// ClientHandshake runs a dialer's TLS handshake on raw, to addr, within
// ctx. On failure raw is closed and the error says what went wrong in
// words an operator can act on: a node without TLS, a certificate of
// another CA, a timeout.
func ClientHandshake(ctx context.Context, raw net.Conn, cfg *tls.Config, addr string) (net.Conn, error) {
	conn := newBatchedTLS(raw, func(conn net.Conn) *tls.Conn { return tls.Client(conn, cfg) })
	err := conn.HandshakeContext(ctx)
	if err == nil {
		return conn, nil
	}
	_ = raw.Close()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	return nil, tlsDialError(addr, err)
}

// tlsDialError explains a failed TLS handshake with addr.
func tlsDialError(addr string, err error) error {
	switch {
	case isRemoteAlert(err, tlsAlertProtocolVersionCode):
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED,
			"%s does not use TLS (the node runs without --tls-cert): connect without TLS, or enable it on the node", addr)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
			"TLS handshake with %s: the connection closed (a node refusing the certificate, or not a TLS port)", addr)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "TLS handshake with %s timed out", addr)
	}
	return Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED, "TLS handshake with %s: %v", addr, err)
}

// tlsAlertProtocolVersionCode is the alert tlsAlertProtocolVersion carries.
const tlsAlertProtocolVersionCode = 70

// isRemoteAlert reports whether err is the peer's TLS alert code. crypto/tls
// reports a received alert as a *net.OpError "remote error" around a value
// of its unexported alert type (a uint8), so the code is read by kind.
func isRemoteAlert(err error, code uint64) bool {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return false
	}
	v := reflect.ValueOf(op.Err)
	return v.Kind() == reflect.Uint8 && v.Uint() == code
}
