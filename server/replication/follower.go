package replication

import "fmt"

// FollowerFetchFrom is what a follower sends its leader for this bucket:
// its leader epoch and durable end (the caller adds its last epoch).
func (b *Bucket) FollowerFetchFrom() (leader uint32, epoch int32, offset int64, ok bool) {
	if b.role != RoleFollower {
		return 0, 0, 0, false
	}
	return b.leader, b.leaderEpoch, b.durableEnd, true
}

// Fetched records a follower's fetch answer from the leader of epoch, after
// the caller appended and synced what it got (durableEnd is its log's durable
// end now): the high watermark becomes min(leader's, own durable end) when
// that is higher. An answer for another epoch or leader changes nothing.
func (b *Bucket) Fetched(leader uint32, epoch int32, leaderHW, durableEnd int64) Effects {
	if b.role != RoleFollower || b.leader != leader || b.leaderEpoch != epoch {
		return Effects{}
	}
	b.durableEnd = max(b.durableEnd, durableEnd)
	var eff Effects
	if hw := min(leaderHW, b.durableEnd); hw > b.hw {
		b.hw = hw
		eff.HWAdvanced = true
	}
	b.check()
	return eff
}

// TruncationPoint is where a follower truncates when its leader reports
// divergence: the leader's end of divergingEpoch, or the follower's own end
// of that epoch when it is earlier (both logs agree up to the smaller).
// localEpochEnd answers the follower's epoch cache like LeaderLog.EpochEnd.
func TruncationPoint(divergingEpoch int32, divergingEnd int64, localEpochEnd func(int32) (int32, int64, bool)) int64 {
	to := divergingEnd
	if ep, end, ok := localEpochEnd(divergingEpoch); ok && ep <= divergingEpoch {
		to = min(to, end)
	}
	return to
}

// Truncated records that the follower's log was truncated to end.
// Truncation of a clean log never crosses the high watermark; an unclean
// election can make it, and the high watermark then follows.
func (b *Bucket) Truncated(end int64) {
	assertf(b.role != RoleLeader, "a leader truncated its log to %d", end)
	b.durableEnd = end
	b.hw = min(b.hw, end)
	if b.lostTailFrom >= 0 && end <= b.lostTailFrom {
		b.lostTailFrom = -1 // cut away: fetched again from the leader
	}
	b.check()
}

// ConsumerRange decides a consumer's read at offset: the range [from, to)
// to serve (empty when offset is at or above the high watermark but within
// the log, as on a new leader whose high watermark still lags the old one:
// the consumer waits), or an error.
func (b *Bucket) ConsumerRange(offset, logStart, logEnd int64) (from, to int64, err error) {
	switch {
	case b.role != RoleLeader:
		return 0, 0, fmt.Errorf("%w: node %d is %s (leader: node %d)", ErrNotLeader, b.cfg.Self, b.role, b.leader)
	case offset < logStart || offset > max(b.hw, logEnd):
		return 0, 0, fmt.Errorf("%w: offset %d outside [%d, %d]", ErrOutOfRange, offset, logStart, max(b.hw, logEnd))
	case offset >= b.hw:
		return offset, offset, nil
	}
	return offset, b.hw, nil
}
