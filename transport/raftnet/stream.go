package raftnet

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/internal/sampledlog"
	"github.com/floedb/floe/transport/tlsconf"
)

// Raft handshake, after the 8-byte transport.RaftHeader: the dialer sends its cluster
// id and the incarnation it expects the peer at that address to be (each as
// one length byte and the bytes; the incarnation may be empty: unknown). The
// acceptor answers raftHandshakeOK when the cluster id is its own and the
// expected incarnation is empty or its own, and otherwise closes the
// connection without a word.
//
// The incarnation check keeps a node whose folder was wiped out of
// elections it must not take part in: a peer that still knows the old
// incarnation at that address (it has not applied the rejoin) cannot reach
// the new one, so it cannot collect the vote of a node that forgot its
// votes.
const (
	maxClusterIDBytes   = 255
	raftHandshakeOK     = byte(0x01)
	maxRaftHandshakes   = 64 // handshakes in progress at once; see startHandshake
	defaultRaftDialWait = transport.DefaultHandshakeTimeout
)

// StreamLayer carries hashicorp/raft's NetworkTransport over the Raft route
// of a transport.Listener: it implements raft.StreamLayer. Its connections
// are checked to come from the same cluster.
type StreamLayer struct {
	lis         net.Listener
	addr        net.Addr
	clusterID   string
	incarnation string
	expected    func(address string) string
	timeout     time.Duration
	tls         *tls.Config // nil: plaintext
	nodesOnly   bool
	log         *slog.Logger

	ready   chan net.Conn  // handshaken connections, for Accept
	done    chan struct{}  // closed by Close
	lisDone chan struct{}  // closed when the Raft listener fails
	lisErr  error          // why, set before lisDone closes
	conns   *raftConnSet   // handed to Raft
	evicted sampledlog.Log // handshakes closed to make room
	notNode sampledlog.Log // connections refused for not being a node

	closeOnce sync.Once
	wg        sync.WaitGroup

	mu          sync.Mutex
	handshaking map[net.Conn]uint64 // → arrival order
	arrivals    uint64
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// StreamConfig configures a StreamLayer.
type StreamConfig struct {
	// ClusterID (at most 255 bytes) is sent when dialing and required of
	// every accepted connection.
	ClusterID string
	// Incarnation is this node's incarnation (at most 255 bytes): dialers
	// that expect another one at this address are refused.
	Incarnation string
	// ExpectedIncarnation returns the incarnation a dial to address should
	// reach, "" when unknown (then any is accepted). Nil: always "".
	ExpectedIncarnation func(address string) string
	// TLS, when set, is the configuration Raft dials its peers with
	// (tlsconf.Source.ClientConfig: the peer must show a node
	// certificate). nil: plaintext.
	TLS *tls.Config
	// NodesOnly requires every accepted connection to have come through
	// the listener's TLS with a node certificate: Raft speaks only to
	// nodes of the cluster. Off, peers are checked by cluster id only
	// (plaintext, or TLS that identifies nobody).
	NodesOnly bool
	Logger    *slog.Logger
}

// NewStreamLayer takes over l's Raft listener. Close it before closing l.
func NewStreamLayer(l *transport.Listener, cfg StreamConfig) *StreamLayer {
	limits := l.Config()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	expected := cfg.ExpectedIncarnation
	if expected == nil {
		expected = func(string) string { return "" }
	}
	s := &StreamLayer{
		lis:         l.Raft(),
		addr:        l.Addr(),
		clusterID:   cfg.ClusterID,
		incarnation: cfg.Incarnation,
		expected:    expected,
		timeout:     limits.HandshakeTimeout,
		tls:         cfg.TLS,
		nodesOnly:   cfg.NodesOnly,
		log:         logger,
		ready:       make(chan net.Conn),
		done:        make(chan struct{}),
		lisDone:     make(chan struct{}),
		conns:       newRaftConnSet(limits.MaxRaftConns, logger),
		handshaking: make(map[net.Conn]uint64),
	}
	s.wg.Go(s.acceptLoop)
	return s
}

// Accept returns the next connection from a peer of the same cluster, once
// the first byte of its first RPC has arrived (see raftconns.go).
func (s *StreamLayer) Accept() (net.Conn, error) {
	select {
	case conn := <-s.ready:
		return conn, nil
	case <-s.done:
		return nil, pkgerr.Errorf("raftnet", "stream layer: %w", net.ErrClosed)
	case <-s.lisDone:
		return nil, pkgerr.Errorf("raftnet", "stream layer: %w", s.lisErr)
	}
}

// Addr returns the Listener's address.
func (s *StreamLayer) Addr() net.Addr { return s.addr }

// Close stops Accept, closes the Raft listener and the connections still
// handshaking, and waits for its goroutines. Connections already returned by
// Accept or Dial are Raft's.
func (s *StreamLayer) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		_ = s.lis.Close()
		s.mu.Lock()
		for conn := range s.handshaking {
			_ = conn.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return nil
}

// Dial connects to a peer's RPC port and introduces itself as Raft of this
// cluster. It fails when the peer does not answer the handshake: another
// cluster, or not a meta node.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if len(s.clusterID) > maxClusterIDBytes {
		return nil, pkgerr.Errorf("raftnet", "dial: cluster id is %d bytes, at most %d", len(s.clusterID), maxClusterIDBytes)
	}
	want := s.expected(string(address))
	if len(want) > maxClusterIDBytes {
		return nil, pkgerr.Errorf("raftnet", "dial: incarnation is %d bytes, at most %d", len(want), maxClusterIDBytes)
	}
	if timeout <= 0 {
		timeout = defaultRaftDialWait
	}
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, pkgerr.Errorf("raftnet", "dial %s: %w", address, err)
	}
	if s.tls != nil {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		conn, err = transport.ClientHandshake(ctx, conn, s.tls, string(address))
		cancel()
		if err != nil {
			return nil, pkgerr.Errorf("raftnet", "dial %s: %w", address, err)
		}
	}
	hello := make([]byte, 0, len(transport.RaftHeader)+2+len(s.clusterID)+len(want))
	hello = append(hello, transport.RaftHeader...)
	hello = append(hello, byte(len(s.clusterID)))
	hello = append(hello, s.clusterID...)
	hello = append(hello, byte(len(want)))
	hello = append(hello, want...)
	var ack [1]byte
	err = conn.SetDeadline(time.Now().Add(timeout))
	if err == nil {
		_, err = conn.Write(hello)
	}
	if err == nil {
		_, err = io.ReadFull(conn, ack[:])
	}
	if err == nil && ack[0] == transport.RaftTLSRequired {
		_ = conn.Close()
		return nil, pkgerr.Errorf("raftnet", "handshake with %s refused: the peer requires TLS (--tls-cert on this node)", address)
	}
	if err == nil && ack[0] != raftHandshakeOK {
		err = fmt.Errorf("unexpected answer %#x", ack[0])
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		_ = conn.Close()
		return nil, pkgerr.Errorf("raftnet", "handshake with %s refused (another cluster, or not a meta node?): %w", address, err)
	}
	return conn, nil
}

// acceptLoop takes Raft connections off the listener and handshakes each in
// a goroutine of its own, so a slow peer delays nobody else.
func (s *StreamLayer) acceptLoop() {
	for {
		conn, err := s.lis.Accept()
		if err != nil {
			s.lisErr = err
			close(s.lisDone)
			return
		}
		if !s.startHandshake(conn) {
			_ = conn.Close()
			return
		}
		s.wg.Go(func() { s.handshake(conn) })
	}
}

// startHandshake registers conn as handshaking; false once Close has been
// called. Handshakes in progress are bounded, but a new one never waits for
// a slot: it closes the handshake that started first. Waiting would let
// connections that send the prefix and nothing more hold every slot until
// they time out, and a real peer, whose whole handshake comes in one
// packet, wait as long.
func (s *StreamLayer) startHandshake(conn net.Conn) bool {
	s.mu.Lock()
	if s.closing() {
		s.mu.Unlock()
		return false
	}
	var oldest net.Conn
	if len(s.handshaking) >= maxRaftHandshakes {
		first := ^uint64(0)
		for c, n := range s.handshaking {
			if n < first {
				oldest, first = c, n
			}
		}
		delete(s.handshaking, oldest)
	}
	s.arrivals++
	s.handshaking[conn] = s.arrivals
	s.mu.Unlock()
	if oldest != nil {
		if suppressed, ok := s.evicted.Allow(); ok {
			s.log.Warn("closing the oldest raft handshake in progress to make room for a new one",
				"remote_addr", oldest.RemoteAddr().String(), "handshakes", maxRaftHandshakes, "suppressed", suppressed)
		}
		_ = oldest.Close()
	}
	return true
}

// handshake checks one incoming connection's cluster id, answers it, waits
// for the first byte of its first RPC and hands it to Accept; any other
// connection is closed.
func (s *StreamLayer) handshake(conn net.Conn) {
	remote := conn.RemoteAddr().String()
	if err := s.checkPeerNode(conn); err != nil {
		if suppressed, ok := s.notNode.Allow(); ok {
			s.log.Warn("refusing raft connection: Raft accepts only nodes of the cluster", "remote_addr", remote,
				"error", err, "suppressed", suppressed)
		}
		s.mu.Lock()
		delete(s.handshaking, conn)
		s.mu.Unlock()
		_ = conn.Close()
		return
	}
	got, wantIncarnation, err := s.readHello(conn)
	if err == nil && got != s.clusterID {
		s.log.Warn("refusing raft connection from another cluster",
			"remote_addr", remote, "peer_cluster_id", got, "cluster_id", s.clusterID)
		err = errClusterRefused
	} else if err == nil && wantIncarnation != "" && wantIncarnation != s.incarnation {
		s.log.Warn("refusing raft connection meant for an earlier incarnation of this node",
			"remote_addr", remote, "expected_incarnation", wantIncarnation, "incarnation", s.incarnation)
		err = errIncarnationRefused
	} else if err != nil && !s.closing() && s.stillHandshaking(conn) {
		s.log.Warn("raft handshake failed", "remote_addr", remote, "error", err)
	}
	if err == nil {
		_, err = conn.Write([]byte{raftHandshakeOK})
	}
	var first [1]byte
	if err == nil {
		// Still under readHello's deadline.
		if _, err = io.ReadFull(conn, first[:]); err != nil {
			s.log.Debug("closing raft connection that sent no RPC after its handshake", "remote_addr", remote, "error", err)
		}
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	s.mu.Lock()
	_, mine := s.handshaking[conn] // not closed to make room
	delete(s.handshaking, conn)
	s.mu.Unlock()
	if err != nil || !mine {
		_ = conn.Close()
		return
	}
	rc := s.conns.admit(conn, first[0])
	select {
	case s.ready <- rc:
	case <-s.done:
		_ = rc.Close()
	}
}

// checkPeerNode requires, with NodesOnly, that conn came through TLS with
// a node certificate of the cluster's CA.
func (s *StreamLayer) checkPeerNode(conn net.Conn) error {
	if !s.nodesOnly {
		return nil
	}
	st, ok := conn.(transport.TLSState)
	if !ok {
		return pkgerr.New("raftnet", "the connection is not TLS")
	}
	p, err := tlsconf.PeerIdentity(st.ConnectionState())
	if err != nil {
		return err
	}
	if !p.IsNode() {
		return pkgerr.Errorf("raftnet", "the peer is %s, not a node", p)
	}
	return nil
}

// stillHandshaking reports whether conn is still in its handshake, that is
// not closed to make room for another.
func (s *StreamLayer) stillHandshaking(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.handshaking[conn]
	return ok
}

// closing reports whether Close has been called.
func (s *StreamLayer) closing() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

var (
	// errClusterRefused marks a handshake refused for its cluster id.
	errClusterRefused = pkgerr.New("raftnet", "peer of another cluster")
	// errIncarnationRefused marks a handshake meant for another incarnation.
	errIncarnationRefused = pkgerr.New("raftnet", "peer expects another incarnation")
)

// readHello reads the dialer's cluster id and expected incarnation within
// the handshake timeout.
func (s *StreamLayer) readHello(conn net.Conn) (clusterID, incarnation string, err error) {
	if err := conn.SetDeadline(time.Now().Add(s.timeout)); err != nil {
		return "", "", err
	}
	if clusterID, err = readShortString(conn); err != nil {
		return "", "", err
	}
	if incarnation, err = readShortString(conn); err != nil {
		return "", "", err
	}
	return clusterID, incarnation, nil
}

// readShortString reads one length byte and that many bytes.
func readShortString(r io.Reader) (string, error) {
	var buf [1 + maxClusterIDBytes]byte
	if _, err := io.ReadFull(r, buf[:1]); err != nil {
		return "", err
	}
	n := int(buf[0])
	if _, err := io.ReadFull(r, buf[1:1+n]); err != nil {
		return "", err
	}
	return string(buf[1 : 1+n]), nil
}
