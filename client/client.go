package client

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
)

// Client is a connection to a Floe cluster. It is safe for concurrent use.
type Client struct {
	addrs []string
	pool  *transport.Pool
	// http reads remote log segments straight from object storage
	// (presigned URLs the leaders hand out).
	http *http.Client

	// writes are the ordered write streams to the nodes (write_stream.go).
	writes writeStreams
	// writerTokens holds the token of each writer id allocated
	// (int64 → []byte), sent with the id's batches.
	writerTokens sync.Map

	codecOnce sync.Once
	codec     *record.Codec // zstd, made on first use
	codecErr  error
}

// Retries: each attempt is bounded; the waits between rounds of attempts
// grow from retryBackoffMin to retryBackoffMax (newRetryBackoff).
const (
	// attemptTimeout bounds one attempt against one server.
	attemptTimeout = 5 * time.Second
	// connectGiveUp is how long Connect keeps trying, per address, while
	// nothing accepts a connection at all.
	connectGiveUp = time.Second
	// connectProbeTimeout bounds an attempt while no address has answered
	// yet. A Floe node answers Connect's status call at once, so an address
	// that accepts a connection and then says nothing this long is not a
	// Floe node (an HTTP server waits for a request line that never
	// comes), or a stalled one: Connect moves on and gives up after
	// connectGiveUp per address, as for one where nothing listens.
	connectProbeTimeout = time.Second
	retryBackoffMin     = 20 * time.Millisecond
	retryBackoffMax     = 200 * time.Millisecond
)

// Connect returns a client for the cluster reachable at any of addrs (RPC
// addresses of its nodes), over plaintext and without credentials (floe
// dev, a cluster without security). It checks that one of them answers.
func Connect(ctx context.Context, addrs ...string) (*Client, error) {
	return ConnectWith(ctx, Config{Addrs: addrs})
}

// Config says how to reach a cluster and who the client is.
type Config struct {
	// Addrs are RPC addresses of the cluster's nodes, tried in turn.
	Addrs []string
	// TLS connects with TLS; TLSFromFiles makes it from the cluster's CA
	// and, for a client that proves who it is with one, a client
	// certificate. nil: plaintext.
	TLS *tls.Config
	// User and Password sign in with SCRAM-SHA-256 on every connection,
	// on a cluster that authenticates its callers. With a client
	// certificate, leave them empty: the certificate says who the client
	// is.
	User, Password string
}

// TLSFromFiles returns the TLS configuration of a client of a cluster
// whose CA certificate is in caFile: the nodes must show node certificates
// of that CA. certFile and keyFile are the client's certificate and key,
// or both empty for a client that signs in with a password. The files are
// read again when they change.
func TLSFromFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	src, err := tlsconf.Load(tlsconf.Files{CA: caFile, Cert: certFile, Key: keyFile}, nil)
	if err != nil {
		return nil, pkgerr.Errorf("client", "%w", err)
	}
	return src.ClientConfig(), nil
}

// ConnectWith returns a client for the cluster cfg describes. It checks
// that one of the nodes answers; wrong credentials fail it at once with an
// error matching transport.ErrUnauthenticated.
func ConnectWith(ctx context.Context, cfg Config) (*Client, error) {
	addrs := cfg.Addrs
	if len(addrs) == 0 {
		return nil, pkgerr.New("client", "no server address")
	}
	pc := transport.PoolConfig{TLS: cfg.TLS}
	switch {
	case cfg.User != "":
		auth, err := transport.ScramAuthenticator(cfg.User, cfg.Password)
		if err != nil {
			return nil, pkgerr.Errorf("client", "%w", err)
		}
		pc.Authenticate = auth
	case cfg.Password != "":
		return nil, pkgerr.New("client", "a password without a user name")
	}
	c := &Client{addrs: addrs, pool: transport.NewPool(pc),
		http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	c.writes.c = c
	err := c.callUntil(ctx, connectGiveUp*time.Duration(len(addrs)), func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.RaftStatus(ctx, &pb.RaftStatusRequest{})
		return err
	})
	if err != nil {
		c.pool.Close()
		if errors.Is(err, transport.ErrUnauthenticated) {
			return nil, pkgerr.Errorf("client", "%v refused the connection: %w", addrs, err)
		}
		return nil, pkgerr.Errorf("client", "no server answered at %v: %w", addrs, err)
	}
	return c, nil
}

// httpClient reads remote segments; its requests are bounded by their
// contexts.
func (c *Client) httpClient() *http.Client { return c.http }

// Close releases the client's connections. Writers and scanners of the
// client must be closed first.
func (c *Client) Close() error {
	c.writes.close()
	err := c.pool.Close()
	c.http.CloseIdleConnections()
	c.codecOnce.Do(func() {}) // no codec made after Close
	if c.codec != nil {
		c.codec.Close()
	}
	return err
}

// batchCodec returns the client's batch compression codec, shared by its
// writers and scanners.
func (c *Client) batchCodec() (*record.Codec, error) {
	c.codecOnce.Do(func() {
		c.codec, c.codecErr = record.NewCodec(record.CodecConfig{})
	})
	if c.codec == nil && c.codecErr == nil {
		return nil, transport.ErrPoolClosed
	}
	return c.codec, c.codecErr
}

// Admin returns the administration API.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// call runs fn against the servers in turn, moving on and retrying while
// errors are retriable, until one answers or ctx ends.
func (c *Client) call(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error {
	return c.callUntil(ctx, 0, fn)
}

// callUntil is call that gives up after unreachable (0: never) when no
// address has answered as a Floe node yet: a mistyped address, a cluster
// that is not running, or an address where another service listens fails
// in about a second per address, not after the caller's whole timeout.
// Once any server answers, retries run until ctx ends, as a cluster
// electing a leader needs.
func (c *Client) callUntil(ctx context.Context, unreachable time.Duration,
	fn func(context.Context, pb.DRPCMetaClient) error) error {
	bo := newRetryBackoff()
	var lastErr error
	start, reached := time.Now(), false
	for attempt := 0; ; attempt++ {
		addr := c.addrs[attempt%len(c.addrs)]
		probing := unreachable > 0 && !reached
		// Each attempt is bounded, so a node that accepts connections but
		// does not answer (stopped, overloaded) only delays the call.
		timeout := attemptTimeout
		if probing {
			timeout = connectProbeTimeout
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(actx, pb.NewDRPCMetaClient(c.pool.Conn(addr)))
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		switch {
		case timedOut && probing:
			err = silentAddrError(ctx, addr, timeout)
		case timedOut:
			err = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "%s did not answer within %v", addr, attemptTimeout)
		}
		var dial *transport.DialError
		notFloe := errors.Is(err, transport.ErrNotFloe)
		if !errors.As(err, &dial) && !notFloe {
			reached = true
		}
		// NOT_ENOUGH_REPLICAS is retriable for writes (the ISR may grow
		// back), but for metadata calls it means the request asks for more
		// nodes than the cluster has: answer at once. An address that is
		// not a Floe node is passed over while another may answer.
		if (!transport.IsRetriable(err) && !(notFloe && probing)) || errors.Is(err, transport.ErrNotEnoughReplicas) {
			return err
		}
		if ctx.Err() != nil {
			if lastErr != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
				return fmt.Errorf("%w (last error: %v)", err, lastErr)
			}
			return err
		}
		lastErr = err
		if (attempt+1)%len(c.addrs) == 0 {
			if unreachable > 0 && !reached && time.Since(start) >= unreachable {
				return err
			}
			if !bo.Wait(ctx) {
				return err
			}
		}
	}
}

// silentAddrError is the error of an address that gave no answer within
// silence while Connect probed it: a NotFloeError when it accepts
// connections, else the dial's error, as for a node not running.
func silentAddrError(ctx context.Context, addr string, silence time.Duration) error {
	if err := transport.ProbeDial(ctx, addr, silence); err != nil {
		return &transport.DialError{Err: err}
	}
	return &transport.NotFloeError{Addr: addr, Silence: silence}
}

// newRequestID returns a fresh request id for one logical write.
func newRequestID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}
