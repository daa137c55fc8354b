package raftnet

// Counts the tests wait on, so they wait on conditions instead of time.

// HandshakesInProgress returns how many accepted Raft connections are
// still in their handshake.
func (s *StreamLayer) HandshakesInProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handshaking)
}
