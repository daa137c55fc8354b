package raftnet

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/transport/internal/sampledlog"
)

// maxRaftConnsFlag is the floe serve flag that sets the cap, named in the
// log when the cap closes a connection.
const maxRaftConnsFlag = "--max-raft-conns"

// hashicorp/raft's NetworkTransport gives every connection it accepts a
// 256 KiB read buffer (and a 4 KiB write buffer) for as long as the
// connection lives, idle or not. Two things keep that bounded:
//
//   - A connection is handed to Raft only once the first byte of its first
//     RPC has arrived (StreamLayer.handshake waits for it within the
//     handshake timeout). Real dialers send an RPC right after the
//     handshake; one that sends nothing costs a goroutine and a few bytes,
//     then is closed.
//   - raftConnSet holds at most transport.ListenerConfig.MaxRaftConns of them. A new
//     one closes the connection that has read nothing for longest: a peer
//     that leaks connections loses its idle ones, and a peer redials a
//     connection it finds closed. Refusing the newcomer instead would let
//     idle connections lock out a live peer.
//
// Raft's accepted connections get no idle timeout: a dialer keeps idle ones
// in its pool (the pipeline of a quiet leader, votes from the last
// election), and closing them would fail the next RPC sent on them.

// raftConnSet is the Raft connections handed to Raft and not yet closed.
type raftConnSet struct {
	max     int
	log     *slog.Logger
	epoch   time.Time // lastRead counts from it, on the monotonic clock
	evicted sampledlog.Log

	mu       sync.Mutex
	conns    map[*raftConn]struct{}
	admitted uint64
}

func newRaftConnSet(maxConns int, logger *slog.Logger) *raftConnSet {
	return &raftConnSet{max: maxConns, log: logger, epoch: time.Now(), conns: make(map[*raftConn]struct{})}
}

// admit wraps conn, whose first byte has been read already, for Raft; when
// the set is full it closes the idlest connection to make room.
func (s *raftConnSet) admit(conn net.Conn, first byte) *raftConn {
	rc := &raftConn{Conn: conn, set: s, first: first, hasFirst: true}
	rc.touch()
	var idlest *raftConn
	s.mu.Lock()
	s.admitted++
	rc.seq = s.admitted
	if len(s.conns) >= s.max {
		for c := range s.conns {
			if idlest == nil || c.idleSince() < idlest.idleSince() ||
				(c.idleSince() == idlest.idleSince() && c.seq < idlest.seq) {
				idlest = c
			}
		}
		delete(s.conns, idlest)
	}
	s.conns[rc] = struct{}{}
	s.mu.Unlock()
	if idlest != nil {
		if suppressed, ok := s.evicted.Allow(); ok {
			s.log.Warn("closing the idlest raft connection to make room for a new one",
				"remote_addr", idlest.RemoteAddr().String(), "idle", time.Since(s.epoch)-time.Duration(idlest.idleSince()),
				"max_raft_conns", s.max, "flag", maxRaftConnsFlag, "suppressed", suppressed)
		}
		_ = idlest.Close()
	}
	return rc
}

// remove forgets c.
func (s *raftConnSet) remove(c *raftConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// raftConn is a connection handed to Raft: it replays the first byte read
// during the handshake, and notes when it last read anything.
type raftConn struct {
	net.Conn
	set      *raftConnSet
	seq      uint64 // order of admission, for ties
	lastRead atomic.Int64
	once     sync.Once

	// Read by one goroutine: Raft's reader of this connection.
	first    byte
	hasFirst bool
}

// Read returns the first byte, then what the connection reads.
func (c *raftConn) Read(p []byte) (int, error) {
	if c.hasFirst && len(p) > 0 {
		p[0], c.hasFirst = c.first, false
		return 1, nil
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

// Close closes the connection and leaves the set.
func (c *raftConn) Close() error {
	c.once.Do(func() { c.set.remove(c) })
	return c.Conn.Close()
}

// touch records a read now.
func (c *raftConn) touch() { c.lastRead.Store(int64(time.Since(c.set.epoch))) }

// idleSince is when the connection last read, as nanoseconds since the
// set's epoch.
func (c *raftConn) idleSince() int64 { return c.lastRead.Load() }
