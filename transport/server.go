package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcserver"
	"storj.io/drpc/drpcwire"
)

// Defaults for the zero ServerConfig and PoolConfig.
const (
	DefaultMaxMessageBytes   = 16 << 20
	DefaultServerIdleTimeout = 60 * time.Second
	DefaultMessageTimeout    = 30 * time.Second

	maxMessageBytesLimit = 1 << 30
)

// ServerConfig configures a Server. The zero value is usable.
type ServerConfig struct {
	// MaxMessageBytes is the largest packet a caller may send (a request
	// message, an RPC name, metadata). A larger one is refused with
	// TOO_LARGE and the connection stays usable. Default 16 MiB, at most
	// 1 GiB.
	MaxMessageBytes int
	// IdleTimeout closes a connection on which no call starts for this
	// long. A call in progress, however long, is not idle. Default 60 s.
	IdleTimeout time.Duration
	// MessageTimeout bounds how long a packet the caller has started (a
	// request message, a stream's next message, even one frame header) may
	// take to arrive in full; a caller that stalls inside one is sent
	// TIMEOUT and its connection closed. The wait between whole messages
	// of a stream is not bounded by it. Default 30 s: a 16 MiB message at
	// about 0.5 MiB/s. Set by floe serve's --rpc-message-timeout.
	MessageTimeout time.Duration
	// ClusterID returns the node's cluster id, "" while it is unknown.
	// Calls naming another cluster are refused with CLUSTER_MISMATCH. nil:
	// never known.
	ClusterID func() string
	// MaxInflightRequestBytes bounds the bytes of large requests (packets
	// over 64 KiB) that the server's connections together may have in
	// reception and handling at once (requestbudget.go). A packet that
	// would pass it waits, at most MessageTimeout, and is then refused
	// with UNAVAILABLE. Default 32 MiB (MaxMessageBytes when
	// larger); negative: no bound. At least
	// MaxMessageBytes. Set by floe serve's --max-inflight-request-bytes.
	MaxInflightRequestBytes int
	// FieldLimits bound the elements of repeated request fields, counted in
	// the encoded message and refused with TOO_LARGE before it is decoded
	// (fieldlimit.go). nil: none.
	FieldLimits []FieldLimit
	// Observer is told of every call served, as it ends (metrics); nil:
	// none.
	Observer RPCObserver
	// Security says who may call (security.go); the zero value: anybody
	// may make any call.
	Security Security
	// Logger receives the server's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *ServerConfig) Validate() error {
	switch {
	case c.MaxMessageBytes < 0 || c.MaxMessageBytes > maxMessageBytesLimit:
		return pkgerr.Errorf("transport", "server config: MaxMessageBytes %d not in [0, %d]", c.MaxMessageBytes, maxMessageBytesLimit)
	case c.IdleTimeout < 0:
		return pkgerr.Errorf("transport", "server config: IdleTimeout %v is negative", c.IdleTimeout)
	case c.MessageTimeout < 0:
		return pkgerr.Errorf("transport", "server config: MessageTimeout %v is negative", c.MessageTimeout)
	}
	if d := c.withDefaults(); d.MaxInflightRequestBytes > 0 && d.MaxInflightRequestBytes < d.MaxMessageBytes {
		return pkgerr.Errorf("transport", "server config: MaxInflightRequestBytes %d is below MaxMessageBytes %d (%s)",
			d.MaxInflightRequestBytes, d.MaxMessageBytes, maxInflightFlag)
	}
	return nil
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultServerIdleTimeout
	}
	if c.MessageTimeout == 0 {
		c.MessageTimeout = DefaultMessageTimeout
	}
	if c.MaxInflightRequestBytes == 0 {
		c.MaxInflightRequestBytes = max(DefaultMaxInflightRequestBytes, c.MaxMessageBytes)
	}
	c.Logger = orDiscard(c.Logger)
	return c
}

// Server serves DRPC calls. Register services on Mux, then Serve. Handlers may
// return any Go error: *Error (or an error with a WireCode method) chooses the
// code, context errors become TIMEOUT, anything else INTERNAL. A panicking
// handler fails its own call with INTERNAL and the server carries on.
type Server struct {
	cfg     ServerConfig
	invalid error
	mux     *Mux
	drpc    *drpcserver.Server
	budget  *requestBudget // nil: none
}

// NewServer returns a server with an empty mux. An invalid cfg makes Serve
// fail.
func NewServer(cfg ServerConfig) *Server {
	s := &Server{invalid: cfg.Validate(), mux: newMux()}
	s.cfg = cfg.withDefaults()
	if s.cfg.MaxInflightRequestBytes > 0 {
		s.budget = newRequestBudget(s.cfg.MaxInflightRequestBytes, s.cfg.MaxMessageBytes)
	}
	limits, err := newFieldLimits(cfg.FieldLimits)
	if err != nil && s.invalid == nil {
		s.invalid = err
	}
	if s.cfg.Security.Authenticate {
		if err := pb.DRPCRegisterAuth(s.mux, newAuthService(s.cfg.Security)); err != nil && s.invalid == nil {
			s.invalid = err
		}
	}
	s.drpc = drpcserver.NewWithOptions(
		&handler{next: s.mux, clusterID: s.cfg.ClusterID, limits: limits, observer: s.cfg.Observer,
			sec: s.cfg.Security, log: s.cfg.Logger},
		drpcserver.Options{Manager: drpcmanager.Options{
			Reader:            drpcwire.ReaderOptions{MaximumBufferSize: s.cfg.MaxMessageBytes + readerSlackBytes},
			InactivityTimeout: s.cfg.IdleTimeout,
		}},
	)
	return s
}

// Mux returns the mux services are registered on, for example
// pb.DRPCRegisterMeta(server.Mux(), impl). Register before Serve.
func (s *Server) Mux() *Mux { return s.mux }

// Serve accepts connections on lis and serves them until ctx is done or lis
// is closed, then closes lis, ends every connection and waits for their
// handlers to return. It returns nil then, and an error if lis fails.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	if s.invalid != nil {
		return s.invalid
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stop := context.AfterFunc(ctx, func() { _ = lis.Close() })
	defer stop()

	const minDelay, maxDelay = 5 * time.Millisecond, time.Second
	var delay time.Duration
	for {
		conn, err := lis.Accept()
		switch {
		case err == nil:
			delay = 0
			wg.Go(func() { s.serveConn(ctx, conn) })
		case ctx.Err() != nil || errors.Is(err, net.ErrClosed):
			return nil
		case isTemporaryAcceptError(err):
			delay = min(max(2*delay, minDelay), maxDelay)
			s.cfg.Logger.Warn("accept failed, retrying", "error", err, "delay", delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		default:
			return pkgerr.Errorf("transport", "serve: %w", err)
		}
	}
}

// serveConn runs the calls of one connection, one after another.
func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	p, err := newPeer(conn)
	if err != nil {
		s.cfg.Logger.Warn("client certificate names no identity; the caller must authenticate with a password",
			"remote_addr", conn.RemoteAddr().String(), "error", err)
		if s.cfg.Security.OnAuthFailure != nil {
			s.cfg.Security.OnAuthFailure("bad_certificate")
		}
	}
	tr := newLimitedConn(conn, s.cfg.MaxMessageBytes, s.cfg.MessageTimeout, s.budget, s.cfg.Logger)
	// Handlers find their connection in the context, to give back its
	// request budget (budgethold.go), and who is on its other end.
	ctx = context.WithValue(context.WithValue(ctx, connKey{}, tr), peerKey{}, p)
	err = s.drpc.ServeOne(ctx, tr)
	_ = tr.Close()
	s.cfg.Logger.Debug("connection closed", "remote_addr", conn.RemoteAddr().String(), "error", err)
}
