package transport

// Counts the tests wait on, so they wait on conditions instead of time.

// HandshakesInProgress returns how many accepted Raft connections are
// still in their handshake.
func (s *RaftStreamLayer) HandshakesInProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handshaking)
}

// PendingConns returns how many connections have not been taken by a
// protocol yet.
func (l *Listener) PendingConns() int {
	l.pending.mu.Lock()
	defer l.pending.mu.Unlock()
	return len(l.pending.conns)
}
