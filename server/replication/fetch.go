package replication

import (
	"fmt"
	"slices"
	"time"
)

// FollowerFetch is one bucket of a follower's fetch, as the leader sees it.
type FollowerFetch struct {
	Follower    uint32
	LeaderEpoch int32
	// Offset is the follower's durable end: where it fetches from.
	Offset int64
	// LastFetchedEpoch is the epoch of the follower's last batch, -1 when
	// its log is empty.
	LastFetchedEpoch int32
	// NodeEpoch is the follower node's registration index, 0 when the
	// caller does not send it (then it is not checked). One older than the
	// leader has seen from that follower is a fetch of an earlier run (a
	// late request of a node since restarted or wiped) and is fenced; a
	// newer one starts the follower's progress afresh.
	NodeEpoch int64
}

// LeaderLog is what the leader's log says for a fetch.
type LeaderLog struct {
	// StartOffset and WrittenEnd bound what followers may fetch (they get
	// batches before the leader's fsync; the high watermark still waits
	// for the leader's durable end).
	StartOffset, WrittenEnd int64
	// EpochEnd answers the epoch cache: the largest epoch ≤ epoch the log
	// holds and the offset where it ends (the next epoch's start, or the
	// log end); ok false when no such epoch.
	EpochEnd func(epoch int32) (int32, int64, bool)
}

// FetchAnswer is what the leader answers a follower's fetch with.
type FetchAnswer struct {
	LeaderEpoch int32
	// Diverging: the follower's last epoch ends at DivergingEnd here
	// (DivergingEpoch is the leader's largest epoch ≤ it): it must truncate
	// and fetch again. Nothing else is answered.
	Diverging      bool
	DivergingEpoch int32
	DivergingEnd   int64
	// From, To: the batches to send ([From, To), whole batches up to the
	// byte budget), and the high watermark.
	From, To int64
	HW       int64
}

// ServeFetch handles a follower's fetch on the leader: epochs checked,
// divergence reported (KIP-320), the follower's end recorded, which may
// move the high watermark and propose the follower into the ISR.
func (b *Bucket) ServeFetch(req FollowerFetch, l LeaderLog, now time.Time) (FetchAnswer, Effects, error) {
	ans := FetchAnswer{LeaderEpoch: b.leaderEpoch, HW: b.hw}
	switch {
	case b.role != RoleLeader:
		return ans, Effects{}, fmt.Errorf("%w: node %d is %s (leader: node %d)", ErrNotLeader, b.cfg.Self, b.role, b.leader)
	case req.LeaderEpoch < b.leaderEpoch:
		return ans, Effects{}, fmt.Errorf("%w: follower %d fetches in epoch %d, the leader is in %d", ErrFenced, req.Follower, req.LeaderEpoch, b.leaderEpoch)
	case req.LeaderEpoch > b.leaderEpoch:
		return ans, Effects{}, fmt.Errorf("%w: follower %d is in epoch %d, this leader only knows %d", ErrUnknownLeaderEpoch, req.Follower, req.LeaderEpoch, b.leaderEpoch)
	case !slices.Contains(b.replicas, req.Follower) || req.Follower == b.cfg.Self:
		return ans, Effects{}, fmt.Errorf("%w: node %d", ErrNotReplica, req.Follower)
	}
	if req.Offset < l.StartOffset {
		// Below the leader's log start the leader's epoch cache cannot
		// judge divergence (it starts there too): the follower catches up
		// from remote storage, where the epochs of what it lacks are.
		return ans, Effects{}, fmt.Errorf("%w: follower %d fetches at %d, below the leader's log start %d",
			ErrOutOfRange, req.Follower, req.Offset, l.StartOffset)
	}
	if req.LastFetchedEpoch >= 0 {
		ep, end, ok := l.EpochEnd(req.LastFetchedEpoch)
		if !ok || ep < req.LastFetchedEpoch || end < req.Offset {
			if !ok {
				ep, end = req.LastFetchedEpoch, l.StartOffset
			}
			ans.Diverging, ans.DivergingEpoch, ans.DivergingEnd = true, ep, end
			return ans, Effects{}, nil
		}
	}
	if req.Offset > l.WrittenEnd {
		return ans, Effects{}, fmt.Errorf("%w: follower %d fetches at %d, the leader holds [%d, %d]",
			ErrOutOfRange, req.Follower, req.Offset, l.StartOffset, l.WrittenEnd)
	}
	f := b.followers[req.Follower]
	if f == nil {
		f = &follower{end: -1, leaderEndAtLastFetch: -1, caughtUpAt: now}
		b.followers[req.Follower] = f
	}
	if req.NodeEpoch != 0 {
		switch {
		case req.NodeEpoch < f.nodeEpoch:
			return ans, Effects{}, fmt.Errorf("%w: follower %d fetches with node epoch %d, it registered again at %d",
				ErrFenced, req.Follower, req.NodeEpoch, f.nodeEpoch)
		case req.NodeEpoch > f.nodeEpoch:
			// A new registration: the node restarted or was wiped, so
			// nothing it reported before (its end, its end at the last
			// fetch) says what its log holds now.
			f.end, f.leaderEndAtLastFetch, f.nodeEpoch = -1, -1, req.NodeEpoch
		}
	}
	f.end = req.Offset
	// Caught up: at the leader's end now, or at its end as of the previous
	// fetch, so that a follower one batch behind a leader that keeps
	// writing still counts (it was caught up when it sent this fetch).
	switch {
	case req.Offset >= l.WrittenEnd:
		f.caughtUpAt = later(f.caughtUpAt, now)
	case f.leaderEndAtLastFetch >= 0 && req.Offset >= f.leaderEndAtLastFetch:
		f.caughtUpAt = later(f.caughtUpAt, f.lastFetchAt)
	}
	f.leaderEndAtLastFetch, f.lastFetchAt = l.WrittenEnd, now
	eff := b.maybeAdvanceHW()
	eff.Merge(b.maybeExpandISR(req.Follower, now))
	b.check()
	ans.From, ans.To, ans.HW = req.Offset, l.WrittenEnd, b.hw
	return ans, eff, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
