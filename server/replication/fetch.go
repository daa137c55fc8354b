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
	// OldestEpoch is the oldest epoch the leader's epoch cache holds (the
	// one its log starts in). Of an epoch older than that the cache knows
	// only that it ended at or before StartOffset, not where: a follower
	// whose last batch is of such an epoch may hold, up to the leader's
	// start, batches of another history (UnjudgedBelowStart). Zero when
	// unknown: no epoch is older.
	OldestEpoch int32
	// Remote is the committed remote log: the leader's history below its
	// start, which judges such a follower's batches there when it holds
	// them up to StartOffset (or, fenced, once cut).
	Remote RemoteView
}

// FetchAnswer is what the leader answers a follower's fetch with.
type FetchAnswer struct {
	LeaderEpoch int32
	// Diverging: the follower's last epoch ends at DivergingEnd here
	// (DivergingEpoch is the leader's largest epoch ≤ it): it must truncate
	// and fetch again. Nothing else is answered. A divergence at the
	// leader's log start says the leader could not judge the follower's
	// log below it (UnjudgedBelowStart).
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
	if ep, end, ok := l.divergence(req.LastFetchedEpoch, req.Offset); ok {
		ans.Diverging, ans.DivergingEpoch, ans.DivergingEnd = true, ep, end
		return ans, Effects{}, nil
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

// divergence is KIP-320's check of a follower's log, ending at offset (at
// or past the leader's start) with a batch of lastEpoch (-1: empty),
// against the leader's: where the follower must truncate to, ok false
// when the leader holds lastEpoch up to offset.
//
// An epoch the leader's cache does not hold is answered at the leader's
// start. So is one older than its oldest when the remote log can judge
// the follower's batches below the start (it holds up to the start, or
// is fenced until its cut), even for a follower that ends there: the
// leader only knows that epoch ended at or before its start, so a
// follower's last batches there may be of another history (after an
// unclean election, kept since by a replica that was down), and taking
// them as agreeing would let it join the ISR and later lead with them.
// The follower has the remote log judge them (UnjudgedBelowStart). Where
// the remote log does not reach the leader's start (a leader restored
// from a KV snapshot past its end) nothing can judge them, and the
// follower's batches may be the only copies: they are kept.
func (l LeaderLog) divergence(lastEpoch int32, offset int64) (int32, int64, bool) {
	if lastEpoch < 0 {
		return 0, 0, false
	}
	ep, end, ok := l.EpochEnd(lastEpoch)
	switch {
	case !ok || lastEpoch < l.OldestEpoch && l.Remote.judgesBelow(l.StartOffset):
		return lastEpoch, l.StartOffset, true
	case ep < lastEpoch || end < offset:
		return ep, end, true
	}
	return 0, 0, false
}

// UnjudgedBelowStart says that a divergence answered at divergingEnd by a
// leader whose log starts at leaderStart left the follower, whose log now
// spans [localStart, localEnd), with batches below the leader's start
// that the leader could not judge (LeaderLog.divergence): the follower's
// last epoch predates the leader's log, and the remote log v, the
// leader's history below its start, can judge them. The follower cuts
// what the remote log holds in another epoch, and drops the rest below
// the leader's start (the remote log holds it and serves it), starting
// over empty there. Fetching on with them instead would be answered the
// same way again and again.
func UnjudgedBelowStart(divergingEnd, leaderStart, localStart, localEnd int64, v RemoteView) bool {
	return divergingEnd == leaderStart && localEnd == leaderStart && localStart < leaderStart && v.judgesBelow(leaderStart)
}

// MayDropBelowStart says whether a follower whose log starts at
// localStart may drop its batches below its leader's start once the
// remote log v judged them (UnjudgedBelowStart): v holds every one, or,
// of a primary-key table, those it does not hold lie below the newest
// KV snapshot, whose store holds their effect (a restore gives them up
// too). Else they may be the only copies, and are kept: the follower
// waits.
func MayDropBelowStart(localStart int64, v RemoteView, primaryKey bool, newestSnapshot int64) bool {
	return localStart >= v.Start || primaryKey && newestSnapshot >= v.Start
}

// judgesBelow says whether the remote log can judge a follower's batches
// below a leader's log start, and holds every one the follower would drop
// after: it holds every offset from its start up to there, or it is
// fenced (it may once cut). Past a gap (a restored leader's) a follower's
// batches below it may be the only copies: nothing judges them, and they
// are kept.
func (v RemoteView) judgesBelow(start int64) bool {
	return v.Fenced || v.CoveredFrom == v.Start && v.Start < start && v.End >= start
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
