package transport

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/internal/sampledlog"
	"storj.io/drpc/drpcmigrate"
)

// RaftHeader is the 8-byte prefix that starts every Raft connection. DRPC
// connections start with drpcmigrate.DRPCHeader ("DRPC!!!1").
const RaftHeader = "FLOERAFT"

// Defaults of the zero ListenerConfig.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxConns         = 4096
	DefaultMaxRaftConns     = 64
	DefaultMaxPendingConns  = 1024
)

// maxConnsFlag is the floe serve flag that sets MaxConns, named in
// refusals and logs so that whoever meets the limit knows which knob it is.
const maxConnsFlag = "--max-rpc-conns"

// prefixBytes is the length of every protocol prefix.
const prefixBytes = len(RaftHeader)

// ListenerConfig configures a Listener. The zero value is usable.
type ListenerConfig struct {
	// HandshakeTimeout is how long a new connection may take to send its
	// 8-byte protocol prefix and be taken by its protocol's Accept; a
	// connection still unclaimed after it is closed. The Raft stream layer
	// also bounds its cluster handshake with it. Default 10 s.
	HandshakeTimeout time.Duration
	// MaxConns bounds the DRPC connections open at once. One more is
	// answered UNAVAILABLE (naming --max-rpc-conns, which sets it) and
	// closed. Default 4096.
	MaxConns int
	// MaxRaftConns bounds the Raft connections handed to Raft at once, a
	// share of their own that DRPC clients cannot take. One more closes
	// the one idle longest (its peer redials). Enforced by
	// raftnet.StreamLayer; set by --max-raft-conns. Default 64.
	MaxRaftConns int
	// MaxPendingConns bounds the connections that have not yet been
	// taken by their protocol (prefix not read, or not accepted yet). One
	// more closes the oldest of them: real clients send their prefix at
	// once, so the oldest is the likeliest to be silent. Default 1024.
	MaxPendingConns int
	// TLS, when set, makes the port a TLS port (tlsport.go): every
	// connection starts with a TLS handshake, the protocol prefix comes
	// inside. A server configuration (tlsconf.Source.ServerConfig). nil:
	// plaintext.
	TLS *tls.Config
	// Logger receives the listener's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *ListenerConfig) Validate() error {
	switch {
	case c.HandshakeTimeout < 0:
		return pkgerr.Errorf("transport", "listener config: HandshakeTimeout %v is negative", c.HandshakeTimeout)
	case c.MaxConns < 0, c.MaxRaftConns < 0, c.MaxPendingConns < 0:
		return pkgerr.Errorf("transport", "listener config: negative MaxConns %d, MaxRaftConns %d or MaxPendingConns %d",
			c.MaxConns, c.MaxRaftConns, c.MaxPendingConns)
	}
	return nil
}

func (c ListenerConfig) withDefaults() ListenerConfig {
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxRaftConns == 0 {
		c.MaxRaftConns = DefaultMaxRaftConns
	}
	if c.MaxPendingConns == 0 {
		c.MaxPendingConns = DefaultMaxPendingConns
	}
	c.Logger = orDiscard(c.Logger)
	return c
}

// Listener is a node's one RPC port: a TCP listener whose connections are
// routed by their first 8 bytes to the DRPC listener or the Raft listener.
// Connections with any other prefix are closed.
type Listener struct {
	cfg     ListenerConfig
	base    net.Listener // the TCP listener
	mux     *drpcmigrate.ListenMux
	pending *pendingSet
	drpc    *routeListener
	raft    *routeListener
	rpcCap  *connCap // DRPC connections served

	plainRefused sampledlog.Log // plaintext callers of a TLS port
	tlsFailed    sampledlog.Log // failed TLS handshakes
	tlsRefused   sampledlog.Log // TLS callers of a plaintext port

	pumps sync.WaitGroup // the routes' goroutines

	mu      sync.Mutex
	running bool
	closed  bool
	stopRun context.CancelFunc
	runDone chan struct{}
}

// Listen opens the TCP listener on addr ("host:port"; port 0 picks one).
// Connections are routed only while Run runs; Close releases everything.
func Listen(addr string, cfg ListenerConfig) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, pkgerr.Errorf("transport", "listen on %s: %w", addr, err)
	}
	return newListener(tcp, cfg), nil
}

// NewListener routes the connections of base, which it owns from now on,
// as Listen does those of a TCP listener (tests run one over in-memory
// pipes).
func NewListener(base net.Listener, cfg ListenerConfig) (*Listener, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newListener(base, cfg.withDefaults()), nil
}

// newListener routes the connections of base; cfg has its defaults.
func newListener(base net.Listener, cfg ListenerConfig) *Listener {
	l := &Listener{
		cfg:     cfg,
		base:    base,
		pending: newPendingSet(cfg.HandshakeTimeout, cfg.MaxPendingConns, cfg.Logger),
		rpcCap:  newConnCap(cfg.MaxConns, cfg.Logger),
		runDone: make(chan struct{}),
	}
	if cfg.TLS != nil {
		base = &tlsPort{Listener: base, cfg: cfg.TLS, log: cfg.Logger, refused: &l.plainRefused, failed: &l.tlsFailed}
	}
	l.mux = drpcmigrate.NewListenMux(&acceptRetrier{Listener: base, log: cfg.Logger, pending: l.pending}, prefixBytes)
	l.drpc = newRouteListener(l.mux.Route(drpcmigrate.DRPCHeader), l.rpcCap.admit)
	l.raft = newRouteListener(l.mux.Route(RaftHeader), nil) // raftnet.StreamLayer bounds its own
	l.pumps.Go(l.drpc.pump)
	l.pumps.Go(l.raft.pump)
	return l
}

// DRPC returns the listener of DRPC connections (prefix already consumed), for
// Server.Serve.
func (l *Listener) DRPC() net.Listener { return l.drpc }

// Raft returns the listener of Raft connections (prefix already consumed). A
// raftnet.StreamLayer takes it over; use one or the other.
func (l *Listener) Raft() net.Listener { return l.raft }

// Config returns the Listener's configuration, defaults filled in: the
// Raft stream layer takes its handshake timeout and connection cap from
// it.
func (l *Listener) Config() ListenerConfig { return l.cfg }

// PendingConns returns how many connections have not been taken by a
// protocol yet.
func (l *Listener) PendingConns() int {
	l.pending.mu.Lock()
	defer l.pending.mu.Unlock()
	return len(l.pending.conns)
}

// Addr returns the TCP listener's address.
func (l *Listener) Addr() net.Addr { return l.base.Addr() }

// Run routes connections until ctx is done or Close is called (at once if
// it was already), then closes the listener. It returns nil in those cases,
// and an error if the TCP listener fails.
func (l *Listener) Run(ctx context.Context) error {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil
	case l.running:
		l.mu.Unlock()
		return pkgerr.New("transport", "listener: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.running, l.stopRun = true, cancel
	l.mu.Unlock()
	defer close(l.runDone)

	var wg sync.WaitGroup
	wg.Go(l.refuseUnknown)
	err := l.mux.Run(ctx)
	stopped := ctx.Err() != nil
	l.shutdown()
	wg.Wait()
	if err != nil && !stopped {
		return pkgerr.Errorf("transport", "listener: %w", err)
	}
	return nil
}

// refuseUnknown closes every connection whose prefix matched no protocol.
func (l *Listener) refuseUnknown() {
	for {
		conn, err := l.mux.Default().Accept()
		if err != nil {
			return
		}
		l.refuse(conn)
	}
}

// refuse closes a connection whose prefix matched no protocol. A TLS
// ClientHello on a plaintext port is answered with a TLS alert first, so the
// caller learns that the node does not use TLS.
func (l *Listener) refuse(conn net.Conn) {
	defer conn.Close()
	var head [2]byte
	if _, err := io.ReadFull(conn, head[:]); err == nil && l.cfg.TLS == nil && looksLikeTLS(head[:]) {
		_ = conn.SetWriteDeadline(time.Now().Add(refusalLinger))
		_, _ = conn.Write(tlsAlertProtocolVersion)
		if suppressed, ok := l.tlsRefused.Allow(); ok {
			l.cfg.Logger.Warn("refusing a TLS connection: this node runs without TLS (--tls-cert)",
				"remote_addr", conn.RemoteAddr().String(), "suppressed", suppressed)
		}
		return
	}
	l.cfg.Logger.Debug("closing connection with an unknown protocol prefix", "remote_addr", conn.RemoteAddr().String())
}

// Close stops routing, closes the TCP listener, the DRPC and Raft listeners
// and every connection not yet taken by a protocol, and waits for Run to
// return. Connections already accepted belong to their protocol's server.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		running := l.running
		l.mu.Unlock()
		if running {
			<-l.runDone
		}
		return nil
	}
	l.closed = true
	running, stop := l.running, l.stopRun
	l.mu.Unlock()
	if running {
		stop()
		<-l.runDone
		return nil
	}
	l.shutdown()
	return nil
}

// shutdown closes everything the listener holds; safe to call twice.
func (l *Listener) shutdown() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	_ = l.base.Close()
	_ = l.drpc.Close()
	_ = l.raft.Close()
	_ = l.mux.Default().Close()
	l.pending.closeAll()
	l.pumps.Wait()
	l.rpcCap.close()
}

// orDiscard returns logger, or a logger that discards when it is nil.
func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}
