package replica

// LogState is what one replica's log holds: what an unclean election ranks
// replicas by (rule "damage and the last copy" 2).
type LogState struct {
	// LatestEpoch is the newest leader epoch assigned to the log, -1 for
	// none.
	LatestEpoch int32
	// EndOffset is the end of what the log holds durably.
	EndOffset int64
}

// LogState reports the log of this node's replica of a bucket, whatever its
// role. ok is false when the node holds no open replica of the bucket or
// its log failed: such a replica vouches for nothing.
func (m *Manager) LogState(id BucketID) (state LogState, ok bool) {
	r := m.replica(id)
	if r == nil {
		return LogState{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.failed != nil {
		return LogState{}, false
	}
	state = LogState{LatestEpoch: -1, EndOffset: r.log.EndOffset()}
	if e, ok := r.log.LatestEpoch(); ok {
		state.LatestEpoch = e
	}
	return state, true
}
