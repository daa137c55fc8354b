package transport

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/transport/internal/sampledlog"
)

// drpcmigrate.ListenMux reads each connection's prefix in a goroutine of its
// own with no deadline, then blocks until the protocol's listener takes the
// connection. Left alone, a client that connects and sends nothing (or a
// prefix nobody accepts) would hold a goroutine and a file descriptor until
// the listener closes. So every accepted connection is "pending" until its
// protocol's Accept claims it, a pending connection is closed once
// HandshakeTimeout has passed, and each route has a goroutine that keeps
// taking connections off the mux (routeListener.pump).
//
// Pending connections are also bounded in number (MaxPendingConns), and a
// new one never waits for room: it closes the oldest pending one. Refusing
// the newcomer instead would let a client that opens connections and sends
// nothing lock every real client out, Raft peers included, for as long as
// the handshake timeout.

// pendingSet holds the connections accepted but not yet claimed.
type pendingSet struct {
	timeout time.Duration
	max     int
	log     *slog.Logger
	evicted sampledlog.Log

	mu       sync.Mutex
	conns    map[*pendingConn]struct{}
	arrivals uint64
	closed   bool
}

func newPendingSet(timeout time.Duration, maxConns int, logger *slog.Logger) *pendingSet {
	return &pendingSet{timeout: timeout, max: maxConns, log: logger, conns: make(map[*pendingConn]struct{})}
}

// add registers a new connection, closing the oldest pending one if the set
// is full; false when the set is closed.
func (s *pendingSet) add(conn net.Conn) (*pendingConn, bool) {
	pc := &pendingConn{Conn: conn, set: s, gone: make(chan struct{})}
	var oldest *pendingConn
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false
	}
	if len(s.conns) >= s.max {
		for c := range s.conns {
			if oldest == nil || c.arrival < oldest.arrival {
				oldest = c
			}
		}
		delete(s.conns, oldest)
	}
	s.arrivals++
	pc.arrival = s.arrivals
	s.conns[pc] = struct{}{}
	pc.timer = time.AfterFunc(s.timeout, pc.expire)
	s.mu.Unlock()
	if oldest != nil {
		if suppressed, ok := s.evicted.Allow(); ok {
			s.log.Warn("closing the oldest connection without a protocol yet to make room for a new one",
				"remote_addr", oldest.RemoteAddr().String(), "max_pending_conns", s.max, "suppressed", suppressed)
		}
		oldest.timer.Stop()
		close(oldest.gone)
		_ = oldest.Conn.Close()
	}
	return pc, true
}

// remove reports whether pc was still pending, and makes it no longer so.
func (s *pendingSet) remove(pc *pendingConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[pc]; !ok {
		return false
	}
	delete(s.conns, pc)
	return true
}

// closeAll closes every pending connection, and any added later.
func (s *pendingSet) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns, s.closed = map[*pendingConn]struct{}{}, true
	s.mu.Unlock()
	for pc := range conns {
		pc.timer.Stop()
		close(pc.gone)
		_ = pc.Conn.Close()
	}
}

// pendingConn is a connection between TCP accept and its protocol's Accept.
type pendingConn struct {
	net.Conn
	set     *pendingSet
	arrival uint64 // order of arrival, for making room
	timer   *time.Timer
	gone    chan struct{} // closed when the connection is closed unclaimed
}

// expire closes the connection if no protocol has claimed it yet.
func (pc *pendingConn) expire() {
	if pc.set.remove(pc) {
		pc.set.log.Debug("closing connection not claimed within the handshake timeout",
			"remote_addr", pc.RemoteAddr().String(), "timeout", pc.set.timeout)
		close(pc.gone)
		_ = pc.Conn.Close()
	}
}

// claim hands the connection over to its protocol; false when it has already
// been closed for being too slow.
func (pc *pendingConn) claim() bool {
	if !pc.set.remove(pc) {
		return false
	}
	pc.timer.Stop()
	return true
}

// Close closes the connection and forgets it.
func (pc *pendingConn) Close() error {
	if pc.set.remove(pc) {
		pc.timer.Stop()
		close(pc.gone)
	}
	return pc.Conn.Close()
}

// acceptRetrier is the TCP listener as the mux sees it: accepted connections
// become pending, and temporary accept failures (out of file descriptors, a
// connection aborted before accept) are retried with backoff, because the
// mux stops for good on any accept error.
type acceptRetrier struct {
	net.Listener
	log     *slog.Logger
	pending *pendingSet
}

// Accept returns the next connection, as a *pendingConn.
func (a *acceptRetrier) Accept() (net.Conn, error) {
	pace := backoff.Backoff{Min: 5 * time.Millisecond, Max: time.Second}
	for {
		conn, err := a.Listener.Accept()
		if err == nil {
			pc, ok := a.pending.add(conn)
			if !ok {
				_ = conn.Close()
				return nil, net.ErrClosed
			}
			return pc, nil
		}
		if !isTemporaryAcceptError(err) {
			return nil, err
		}
		delay := pace.Next()
		a.log.Warn("accept failed, retrying", "error", err, "delay", delay)
		// A plain sleep: Close makes the next Accept fail at once.
		time.Sleep(delay)
	}
}

// isTemporaryAcceptError reports accept failures that pass by themselves.
func isTemporaryAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// routeListener is one protocol's listener. A goroutine of its own takes
// the mux route's connections as they come and offers each to Accept until
// the connection expires, so a protocol that never calls Accept (a node that
// runs no Raft) holds nothing beyond HandshakeTimeout either.
type routeListener struct {
	route   net.Listener // the mux's
	admit   admitFunc    // nil: every connection is admitted
	conns   chan *pendingConn
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when pump returns
	err     error         // why pump returned, set before done closes
	once    sync.Once
}

// admitFunc decides whether a claimed connection may be served: it returns
// the connection to serve, or false when it has refused (and disposed of)
// it.
type admitFunc func(net.Conn) (net.Conn, bool)

func newRouteListener(route net.Listener, admit admitFunc) *routeListener {
	return &routeListener{
		route:   route,
		admit:   admit,
		conns:   make(chan *pendingConn),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// pump offers the route's connections to Accept until the route closes.
func (r *routeListener) pump() {
	defer close(r.done)
	for {
		conn, err := r.route.Accept()
		if err != nil {
			if errors.Is(err, drpcmigrate.Closed) {
				err = net.ErrClosed
			}
			r.err = err
			return
		}
		pc, ok := conn.(*pendingConn)
		if !ok { // cannot happen: the mux only sees pending connections
			_ = conn.Close()
			continue
		}
		select {
		case r.conns <- pc:
		case <-pc.gone:
		case <-r.closing:
			_ = pc.Close()
		}
	}
}

// Accept returns the next connection of the protocol, its prefix consumed.
func (r *routeListener) Accept() (net.Conn, error) {
	for {
		select {
		case pc := <-r.conns:
			if !pc.claim() {
				continue // closed for waiting too long: take the next one
			}
			if r.admit == nil {
				return pc.Conn, nil
			}
			if conn, ok := r.admit(pc.Conn); ok {
				return conn, nil
			}
		case <-r.done:
			return nil, r.err
		}
	}
}

// Close stops Accept. The pump returns once the route is closed.
func (r *routeListener) Close() error {
	r.once.Do(func() { close(r.closing) })
	return r.route.Close()
}

// Addr returns the port's address.
func (r *routeListener) Addr() net.Addr { return r.route.Addr() }
