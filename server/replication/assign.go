package replication

import (
	"slices"
	"time"
)

// Assign applies the committed metadata of the bucket. logEnd is the
// replica's log end now (its durable end: a replica takes a role only with
// its log synced). Metadata older than what the replica knows changes
// nothing: a lower leader epoch, or a lower bucket epoch within the same
// leader epoch. So does metadata as of an index below the node's
// registration (Config.NodeEpoch): it predates the registration's epoch
// bumps and the removal of a wiped node from the ISR (docs/replication.md,
// tablet nodes 3).
func (b *Bucket) Assign(a Assignment, logEnd int64, now time.Time) Effects {
	var eff Effects
	if a.Index != 0 && a.Index < b.cfg.NodeEpoch {
		return Effects{StaleMetadata: true}
	}
	if a.LeaderEpoch < b.leaderEpoch || (a.LeaderEpoch == b.leaderEpoch && a.BucketEpoch < b.bucketEpoch) {
		return eff
	}
	b.replicas = slices.Clone(a.Replicas)
	for id := range b.followers {
		// A replica taken away forgets what it reported: added again
		// later, it starts with an empty log and must catch up afresh.
		if !slices.Contains(b.replicas, id) {
			delete(b.followers, id)
		}
	}
	if a.BucketEpoch > b.bucketEpoch || a.LeaderEpoch > b.leaderEpoch {
		eff.ISRChanged = !slices.Equal(b.isr, a.ISR)
		b.isr = slices.Clone(a.ISR)
		b.bucketEpoch = a.BucketEpoch
		// A committed bucket epoch past the proposal's tells its outcome:
		// it was applied (and this is its ISR or a later one) or it never
		// will be. An equal epoch tells nothing: it may still be in Raft.
		if b.pending != nil && a.BucketEpoch > b.pending.BucketEpoch {
			b.pending = nil
		}
	}
	sameRole := a.LeaderEpoch == b.leaderEpoch && a.Leader == b.leader
	switch {
	case sameRole && a.Leader == b.cfg.Self && b.role == RoleLeader:
		eff.Merge(b.maybeAdvanceHW())
	case sameRole && a.Leader == b.cfg.Self:
		// A leadership already refused as stale stays refused.
	case sameRole:
	case a.Leader == b.cfg.Self:
		eff.Merge(b.becomeLeader(a, logEnd, now))
	case a.Leader != 0 && a.LeaderEpoch < b.logEpoch:
		// Following an epoch older than the newest in its own log, the
		// replica would fetch from a deposed leader, be counted toward its
		// high watermark at offsets where it holds newer batches, or be
		// told to truncate below data a later epoch committed.
		b.role, b.leader, b.leaderEpoch = RoleNone, a.Leader, a.LeaderEpoch
		b.followers, b.pending = nil, nil
		eff.RoleChanged, eff.StaleFollowership = true, true
	default:
		b.becomeFollower(a, logEnd)
		eff.RoleChanged = true
	}
	b.check()
	return eff
}

// becomeLeader takes the leadership of epoch a.LeaderEpoch, unless the log
// already holds that epoch from before this core opened: the replica then
// restarted since it led it and may have lost an unsynced tail its
// followers copied, so writing the same epoch again could put other bytes
// at offsets they hold. The controller raises the epoch of every leader
// that registers again; until that reaches us, the replica does not lead.
func (b *Bucket) becomeLeader(a Assignment, logEnd int64, now time.Time) Effects {
	wasLeader := b.role == RoleLeader
	b.leader, b.leaderEpoch = a.Leader, a.LeaderEpoch
	b.followers, b.pending = nil, nil
	if a.LeaderEpoch < b.logEpoch || (a.LeaderEpoch == b.logEpoch && !b.leadsSinceOpen) {
		b.role = RoleNone
		return Effects{RoleChanged: true, StaleLeadership: true}
	}
	assertf(!wasLeader || logEnd >= b.durableEnd, "leader's log shrank from %d to %d across epochs", b.durableEnd, logEnd)
	b.role = RoleLeader
	b.logEpoch, b.leadsSinceOpen = a.LeaderEpoch, true
	b.durableEnd = logEnd
	b.epochStart = logEnd
	b.hw = min(b.hw, logEnd)
	b.followers = map[uint32]*follower{}
	for _, id := range a.Replicas {
		if id != b.cfg.Self {
			// A follower has ReplicaLagMax from now to catch up.
			b.followers[id] = &follower{end: -1, leaderEndAtLastFetch: -1, caughtUpAt: now}
		}
	}
	eff := Effects{StartEpoch: true, RoleChanged: true}
	eff.Merge(b.maybeAdvanceHW())
	return eff
}

// becomeFollower follows a.Leader (0: the bucket is offline).
func (b *Bucket) becomeFollower(a Assignment, logEnd int64) {
	b.role = RoleFollower
	if a.Leader == 0 {
		b.role = RoleNone
	}
	b.leader, b.leaderEpoch = a.Leader, a.LeaderEpoch
	b.followers, b.pending = nil, nil
	b.durableEnd = logEnd
	b.hw = min(b.hw, logEnd)
}
