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
	// start, which judges such a follower's batches there where it holds
	// them (or, fenced, once cut).
	Remote RemoteView
	// SnapshotOffset is the newest committed KV snapshot's offset of a
	// primary-key bucket (0: none, or a log table): a store restored from
	// it holds the effect of the changelog below.
	SnapshotOffset int64
	// SnapshotEpoch is the leader epoch of the leader that took that
	// snapshot: its batches below SnapshotOffset are the leader's history
	// there (unless the remote log is fenced: the snapshot may then be of
	// the history an unclean election left behind).
	SnapshotEpoch int32
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
	if err := b.tailLostError(); err != nil {
		return ans, Effects{}, err
	}
	if req.Offset < l.StartOffset {
		// Below the leader's log start the leader's epoch cache cannot
		// judge divergence (it starts there too): the follower catches up
		// from remote storage, where the epochs of what it lacks are.
		return ans, Effects{}, fmt.Errorf("%w: follower %d fetches at %d, below the leader's log start %d",
			ErrOutOfRange, req.Follower, req.Offset, l.StartOffset)
	}
	if ep, end, ok := l.divergence(req.LastFetchedEpoch, req.Offset, slices.Contains(b.isr, req.Follower)); ok {
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
// when the leader holds lastEpoch up to offset (follower fetch 2, 2c, 2d).
//
// An epoch the leader's cache does not hold, or one older than its
// oldest, is answered at the leader's start, even to a follower that
// ends there: the cache starts at the leader's log start and knows of
// such an epoch only that it ended at or before it, so the follower's
// batches below may be of another history (an unclean election's
// loser's, kept by a replica that was down). Taken as agreeing, they
// would let it join the ISR and, elected later, serve that history. The
// follower has the remote log judge them (UnjudgedBelowStart). One
// thing vouches for them without the cache: the newest KV snapshot,
// taken by the leader of lastEpoch at or past offset (vouches).
//
// An empty follower positioned past the leader's start (a restore, or a
// truncation that dropped every batch it held) lacks what lies between;
// it may join the ISR only when that is held elsewhere for good: by the
// remote log, or, of a primary-key table, by the newest KV snapshot's
// store. Else it is answered at the leader's start too, and starts over
// there. A member of the ISR is not: it was judged when it joined, and
// starting over would take its end below the high watermark. (One past
// the leader's end is out of range.)
func (l LeaderLog) divergence(lastEpoch int32, offset int64, inISR bool) (int32, int64, bool) {
	if lastEpoch < 0 {
		if !inISR && offset > l.StartOffset && offset <= l.WrittenEnd && !l.heldBelow(offset) {
			return lastEpoch, l.StartOffset, true
		}
		return 0, 0, false
	}
	ep, end, ok := l.EpochEnd(lastEpoch)
	switch {
	case (!ok || lastEpoch < l.OldestEpoch) && l.vouches(lastEpoch, offset):
		return 0, 0, false
	case !ok || lastEpoch < l.OldestEpoch:
		return lastEpoch, l.StartOffset, true
	case ep < lastEpoch || end < offset:
		return ep, end, true
	}
	return 0, 0, false
}

// vouches says whether the newest KV snapshot vouches for a follower's
// log ending at offset with a batch of lastEpoch (follower fetch 2e): the
// leader of lastEpoch took it at or past offset, so it had written each
// batch of lastEpoch below offset before, at the same offset (a leader
// writes an offset once), and the follower's batches below those agreed
// with it when fetched: the follower's log is a prefix of that leader's,
// which the snapshot puts in the history. A fenced remote log fences the
// snapshots too: the newest may be of the history an unclean election
// left behind.
func (l LeaderLog) vouches(lastEpoch int32, offset int64) bool {
	return !l.Remote.Fenced && l.SnapshotOffset > 0 && lastEpoch == l.SnapshotEpoch && offset <= l.SnapshotOffset
}

// heldBelow says whether what lies between the leader's start and offset
// is held for good without the leader's log: the remote log holds every
// offset there, or a KV snapshot at or past offset does. Neither counts
// while the remote log is fenced (vouches).
func (l LeaderLog) heldBelow(offset int64) bool {
	v := l.Remote
	return !v.Fenced && (offset <= l.SnapshotOffset || v.CoveredFrom <= l.StartOffset && v.End >= offset && v.End > v.CoveredFrom)
}

// UnjudgedBelowStart says that a divergence answered at divergingEnd by a
// leader whose log starts at leaderStart left the follower, whose log now
// spans [localStart, localEnd), with batches below the leader's start
// that the leader could not judge (LeaderLog.divergence): the follower's
// last epoch predates the leader's log. The remote log, the leader's
// history below its start, judges them where it holds them
// (RemoteDisagreement: the follower cuts what it holds in another
// epoch); the rest go, the log starting over empty at the leader's start,
// when no copy is lost (MayDropBelowStart), else the follower waits.
// Fetching on with them instead would be answered the same way again and
// again.
func UnjudgedBelowStart(divergingEnd, leaderStart, localStart, localEnd int64) bool {
	return divergingEnd == leaderStart && localEnd == leaderStart && localStart < leaderStart
}

// MayDropBelowStart says whether a follower whose log spans [localStart,
// leaderStart), all below its leader's start and judged by the remote log
// v (UnjudgedBelowStart), may drop it: every batch is held by v (from its
// covered start up to the leader's start), or, of a primary-key table,
// lies below the newest KV snapshot, whose store holds its effect (a
// restore gives them up too). Below the remote log's start nothing says
// the batches are gone elsewhere (it starts where its first upload did).
// Else they may be the only copies, and are kept: the follower waits, out
// of the ISR, until log.ttl expires them or a snapshot covers them.
func MayDropBelowStart(localStart, leaderStart int64, v RemoteView, primaryKey bool, newestSnapshot int64) bool {
	lo := localStart
	if primaryKey {
		lo = max(lo, newestSnapshot)
	}
	return lo >= leaderStart || !v.Fenced && v.End > v.CoveredFrom && lo >= v.CoveredFrom && v.End >= leaderStart
}

// RemoteDisagreement is the first offset at which the remote log (its
// epoch spans, the leader's history below its start) holds a batch that a
// follower's log, holding [localStart, localEnd) in local's epochs, holds
// in another epoch: what the follower cuts back to. Offsets the remote
// log does not hold (a gap, past its end) it cannot judge. ok is false
// when they agree wherever both hold batches.
func RemoteDisagreement(remote, local []EpochSpan, localStart, localEnd int64) (int64, bool) {
	clipped := make([]EpochSpan, 0, len(remote))
	for _, s := range remote {
		if s.End = min(s.End, localEnd); s.Start < s.End {
			clipped = append(clipped, s)
		}
	}
	if d, ok := Divergence(clipped, local, localStart); ok {
		return d, true
	}
	return 0, false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
