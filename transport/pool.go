package transport

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcmigrate"
	"storj.io/drpc/drpcwire"
)

// Defaults for the zero PoolConfig (MaxMessageBytes: DefaultMaxMessageBytes).
const (
	DefaultMaxIdlePerAddr  = 64
	DefaultMaxConnsPerAddr = 256
	DefaultPoolIdleTimeout = 30 * time.Second
	DefaultDialTimeout     = 5 * time.Second
)

// ErrPoolClosed is returned by calls through a closed Pool.
var ErrPoolClosed = pkgerr.New("transport", "pool closed")

// PoolConfig configures a Pool. The zero value is usable.
type PoolConfig struct {
	// MaxIdlePerAddr is how many idle connections are kept per address.
	// Default 64: a busy client keeps its connections instead of dialing
	// and closing one per call (IdleTimeout still closes the ones a burst
	// left behind).
	MaxIdlePerAddr int
	// MaxConnsPerAddr bounds the connections per address, idle, busy or
	// being dialed. A call beyond it waits for a connection to be free, or
	// for its context. Default 256.
	MaxConnsPerAddr int
	// IdleTimeout closes a connection left idle this long. Default 30 s,
	// below the server's default IdleTimeout, so the pool normally closes an
	// idle connection before the server does.
	IdleTimeout time.Duration
	// DialTimeout bounds one dial; the call's context may end it sooner.
	// Default 5 s.
	DialTimeout time.Duration
	// MaxMessageBytes refuses larger requests with TOO_LARGE before
	// anything is sent, and is the largest response accepted. Default
	// 16 MiB, at most 1 GiB.
	MaxMessageBytes int
	// ClusterID returns this node's cluster id, sent with every call as
	// metadata MetadataClusterID; "" (or a nil func) sends none.
	ClusterID func() string
	// Dialer opens the connection to addr; nil dials TCP. The pool writes
	// the DRPC prefix itself.
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// TLS, when set, runs a TLS handshake on every new connection before
	// the DRPC prefix (a client configuration, tlsconf.Source.ClientConfig).
	TLS *tls.Config
	// Authenticate, when set, runs on every new connection before its
	// first call (a SCRAM exchange: ScramAuthenticator). Its failure fails
	// the call that needed the connection.
	Authenticate func(ctx context.Context, conn drpc.Conn) error
	// Logger receives the pool's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *PoolConfig) Validate() error {
	switch {
	case c.MaxIdlePerAddr < 0, c.MaxConnsPerAddr < 0, c.IdleTimeout < 0, c.DialTimeout < 0:
		return pkgerr.Errorf("transport", "pool config: negative MaxIdlePerAddr, MaxConnsPerAddr, IdleTimeout or DialTimeout")
	case c.MaxMessageBytes < 0 || c.MaxMessageBytes > maxMessageBytesLimit:
		return pkgerr.Errorf("transport", "pool config: MaxMessageBytes %d not in [0, %d]", c.MaxMessageBytes, maxMessageBytesLimit)
	}
	return nil
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.MaxIdlePerAddr == 0 {
		c.MaxIdlePerAddr = DefaultMaxIdlePerAddr
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	c.MaxIdlePerAddr = min(c.MaxIdlePerAddr, c.MaxConnsPerAddr)
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultPoolIdleTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.Dialer == nil {
		var d net.Dialer
		c.Dialer = func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	c.Logger = orDiscard(c.Logger)
	return c
}

// Pool holds DRPC connections to other nodes. A DRPC connection carries one
// call at a time, so every call takes a connection of its address from the
// pool (dialing one when none is idle) and gives it back when it ends.
type Pool struct {
	cfg       PoolConfig
	invalid   error
	done      chan struct{} // closed by Close
	unblocked chan struct{} // always closed
	wg        sync.WaitGroup

	mu     sync.Mutex
	closed bool
	addrs  map[string]*addrConns
}

// addrConns is the pool's state for one address.
type addrConns struct {
	idle    []*pooledConn // most recently used last
	busy    map[*pooledConn]struct{}
	open    int                // idle + busy + being dialed
	waiters []chan *pooledConn // calls waiting for a connection, oldest first
}

// pooledConn is one connection of the pool.
type pooledConn struct {
	addr      string
	conn      *drpcconn.Conn
	sniff     *sniffConn // the raw connection, telling a foreign peer
	idleSince time.Time
	refused   atomic.Bool // a call was refused UNAUTHENTICATED: the node closes it
}

// NewPool returns a pool. An invalid cfg makes every call fail.
func NewPool(cfg PoolConfig) *Pool {
	p := &Pool{
		invalid:   cfg.Validate(),
		cfg:       cfg.withDefaults(),
		done:      make(chan struct{}),
		unblocked: make(chan struct{}),
		addrs:     make(map[string]*addrConns),
	}
	close(p.unblocked)
	p.wg.Go(p.closeIdleLoop)
	return p
}

// Conn returns a drpc.Conn to addr that any number of goroutines may call
// at once, each call on a pooled connection: pb.NewDRPCMetaClient(p.Conn(addr)).
// Errors out of it have passed through FromWire.
func (p *Pool) Conn(addr string) drpc.Conn { return &poolConn{pool: p, addr: addr} }

// Close closes every connection, idle or busy (their calls fail), and makes
// later calls fail with ErrPoolClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	var conns []*pooledConn
	for _, ac := range p.addrs {
		conns = append(conns, ac.idle...)
		for pc := range ac.busy {
			conns = append(conns, pc)
		}
		ac.open -= len(ac.idle)
		ac.idle = nil
	}
	p.mu.Unlock()
	closeConns(conns)
	p.wg.Wait()
	return nil
}

// get takes an idle connection to addr, or dials one, or waits for one.
func (p *Pool) get(ctx context.Context, addr string) (*pooledConn, error) {
	if p.invalid != nil {
		return nil, p.invalid
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	ac := p.addrs[addr]
	if ac == nil {
		ac = &addrConns{busy: make(map[*pooledConn]struct{})}
		p.addrs[addr] = ac
	}
	var stale []*pooledConn
	now := time.Now()
	for len(ac.idle) > 0 {
		pc := ac.idle[len(ac.idle)-1]
		ac.idle = ac.idle[:len(ac.idle)-1]
		if !p.usable(pc, now) {
			ac.open--
			stale = append(stale, pc)
			continue
		}
		ac.busy[pc] = struct{}{}
		p.mu.Unlock()
		closeConns(stale)
		return pc, nil
	}
	if ac.open < p.cfg.MaxConnsPerAddr {
		ac.open++
		p.mu.Unlock()
		closeConns(stale)
		return p.dial(ctx, addr)
	}
	wait := make(chan *pooledConn, 1)
	ac.waiters = append(ac.waiters, wait)
	p.mu.Unlock()
	closeConns(stale)

	var err error
	select {
	case pc := <-wait:
		if pc == nil { // a slot was handed over: dial
			return p.dial(ctx, addr)
		}
		return pc, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-p.done:
		err = ErrPoolClosed
	}
	if !p.stopWaiting(addr, wait) {
		// Handed a connection or a slot in the meantime: give it back.
		if pc := <-wait; pc != nil {
			p.put(pc, true)
		} else {
			p.releaseSlot(addr)
		}
	}
	return nil, err
}

// dial opens a connection in a slot already counted in open.
func (p *Pool) dial(ctx context.Context, addr string) (*pooledConn, error) {
	dialCtx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	raw, err := p.cfg.Dialer(dialCtx, addr)
	cancel()
	if err != nil {
		p.releaseSlot(addr)
		return nil, err
	}
	if p.cfg.TLS != nil {
		if raw, err = p.handshake(ctx, addr, raw); err != nil {
			p.releaseSlot(addr)
			return nil, err
		}
	}
	sniff := &sniffConn{Conn: raw}
	pc := &pooledConn{
		addr:  addr,
		sniff: sniff,
		conn: drpcconn.NewWithOptions(drpcmigrate.NewHeaderConn(sniff, drpcmigrate.DRPCHeader), drpcconn.Options{
			Manager: drpcmanager.Options{
				Reader: drpcwire.ReaderOptions{MaximumBufferSize: p.cfg.MaxMessageBytes + readerSlackBytes},
			},
		}),
	}
	if p.cfg.Authenticate != nil {
		actx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
		err := p.cfg.Authenticate(actx, pc.conn)
		cancel()
		if err != nil {
			_ = pc.conn.Close()
			p.releaseSlot(addr)
			return nil, FromWire(err)
		}
	}
	p.mu.Lock()
	if p.closed {
		p.addrs[addr].open--
		p.mu.Unlock()
		_ = pc.conn.Close()
		return nil, ErrPoolClosed
	}
	p.addrs[addr].busy[pc] = struct{}{}
	p.mu.Unlock()
	return pc, nil
}

// handshake runs the TLS handshake on a new connection, within the dial
// timeout. A node that does not speak TLS, or whose certificate does not
// pass, fails the call with UNAUTHENTICATED, which retrying does not
// change.
func (p *Pool) handshake(ctx context.Context, addr string, raw net.Conn) (net.Conn, error) {
	hctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	return ClientHandshake(hctx, raw, p.cfg.TLS, addr)
}

// put gives back a connection after a call. One that failed (reuse false),
// is closed, or is not needed is closed.
func (p *Pool) put(pc *pooledConn, reuse bool) {
	p.mu.Lock()
	ac := p.addrs[pc.addr]
	delete(ac.busy, pc)
	switch {
	case !reuse || p.closed || isClosed(pc.conn.Closed()) || pc.refused.Load():
	case len(ac.waiters) > 0:
		wait := ac.waiters[0]
		ac.waiters = ac.waiters[1:]
		ac.busy[pc] = struct{}{}
		wait <- pc
		p.mu.Unlock()
		return
	case len(ac.idle) < p.cfg.MaxIdlePerAddr:
		pc.idleSince = time.Now()
		ac.idle = append(ac.idle, pc)
		p.mu.Unlock()
		return
	}
	p.releaseSlotLocked(pc.addr, ac)
	p.mu.Unlock()
	_ = pc.conn.Close()
}

// releaseSlot frees a slot of addr: it goes to the oldest waiter, if any.
func (p *Pool) releaseSlot(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseSlotLocked(addr, p.addrs[addr])
}

func (p *Pool) releaseSlotLocked(addr string, ac *addrConns) {
	if len(ac.waiters) > 0 && !p.closed {
		wait := ac.waiters[0]
		ac.waiters = ac.waiters[1:]
		wait <- nil
		return
	}
	ac.open--
	if ac.open == 0 && len(ac.waiters) == 0 {
		delete(p.addrs, addr)
	}
}

// stopWaiting removes a waiter; false when it was handed something first.
func (p *Pool) stopWaiting(addr string, wait chan *pooledConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ac := p.addrs[addr]
	i := slices.Index(ac.waiters, wait)
	if i < 0 {
		return false
	}
	ac.waiters = slices.Delete(ac.waiters, i, i+1)
	return true
}

// usable reports whether an idle connection may serve another call.
func (p *Pool) usable(pc *pooledConn, now time.Time) bool {
	return now.Sub(pc.idleSince) < p.cfg.IdleTimeout && !isClosed(pc.conn.Closed())
}

// closeIdleLoop closes connections idle for IdleTimeout, until Close.
func (p *Pool) closeIdleLoop() {
	ticker := time.NewTicker(max(p.cfg.IdleTimeout/2, 10*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-p.done:
			return
		case now := <-ticker.C:
			closeConns(p.takeUnusable(now))
		}
	}
}

// takeUnusable removes the idle connections that usable refuses.
func (p *Pool) takeUnusable(now time.Time) []*pooledConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var stale []*pooledConn
	for addr, ac := range p.addrs {
		keep := ac.idle[:0]
		for _, pc := range ac.idle {
			if p.usable(pc, now) {
				keep = append(keep, pc)
				continue
			}
			stale = append(stale, pc)
			ac.open--
		}
		clear(ac.idle[len(keep):])
		ac.idle = keep
		if ac.open == 0 && len(ac.waiters) == 0 {
			delete(p.addrs, addr)
		}
	}
	return stale
}

// closeConns closes connections outside the pool's lock.
func closeConns(conns []*pooledConn) {
	for _, pc := range conns {
		_ = pc.conn.Close()
	}
}

// isClosed reports whether a signal channel is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
