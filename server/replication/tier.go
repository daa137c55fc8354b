package replication

import (
	"fmt"
	"math"
)

// The rules of the rarer paths that decide what a replica may throw away:
// its damaged log, and its local copies of what remote storage holds. The
// replica (server/replica) asks them; the tier simulation (simtier_test.go)
// drives them with remote storage, retention, KV snapshots, damage and
// unclean elections.

// OtherInSyncCopy reports whether a committed ISR member other than this
// replica holds the records: only then may a replica that found damage
// in its log leave the ISR for it and cut the log back (damage and the
// last copy 1). The ISR's only member keeps its log and answers CORRUPT
// for the damaged batch: it holds the only copy of what was acknowledged
// after it.
func (b *Bucket) OtherInSyncCopy() bool {
	for _, id := range b.isr {
		if id != b.cfg.Self {
			return true
		}
	}
	return false
}

// MayCutDamaged says whether a replica with damage from damagedAt on may
// cut its log back there now: out of the ISR and not leading, and another
// in-sync replica holds the records; lost records (a lost tail: nothing
// after the loss is left) need only the first two. Holding them means
// from damagedAt on: heldFrom is where the leader's readable copies start
// (HeldFrom). An in-sync replica restored from a KV snapshot starts its
// log at the snapshot's offset, and what lies below may be on this
// replica alone; it keeps its log then, damaged batch and all.
func (b *Bucket) MayCutDamaged(lostRecords bool, damagedAt, heldFrom int64) bool {
	for _, id := range b.isr {
		if id == b.cfg.Self {
			return false
		}
	}
	return b.role != RoleLeader && (lostRecords || (b.OtherInSyncCopy() && damagedAt >= heldFrom))
}

// HeldFrom is where a leader's readable copies start: its log's start, or
// below it the covered start of a remote log (not fenced) that reaches it.
func HeldFrom(localStart int64, v RemoteView) int64 {
	if !v.Fenced && v.End >= localStart && v.CoveredFrom < localStart && v.End > v.CoveredFrom {
		return max(v.CoveredFrom, v.Start)
	}
	return localStart
}

// RemoteView is what a replica knows of its bucket's committed remote log.
type RemoteView struct {
	// Start and End bound the remote log; CoveredFrom is where it holds
	// every offset up to End (past a gap a restored leader left).
	Start, CoveredFrom, End int64
	// Fenced: an unclean election fenced the remote log and KV snapshots
	// until their cut (remote storage 6).
	Fenced bool
}

// Retention is what a replica's local retention may delete: sealed
// segments wholly inside [RemoteStart, RemoteEnd) by the local rules
// (remote storage holds them), and by size and age only below ExpireBelow.
type Retention struct {
	RemoteStart, RemoteEnd, ExpireBelow int64
}

// LocalRetention decides the bounds of a replica's local retention
// (remote storage 2, 5, 6): local copies go only where the remote log holds
// every offset, never while an unclean election's fence is up (the remote
// log may hold another history there), and a primary-key replica's
// changelog only below what its store applied, and by age only below its
// newest KV snapshot (a replica without the changelog restores from it).
func LocalRetention(v RemoteView, primaryKey bool, applied, newestSnapshot int64) Retention {
	r := Retention{RemoteStart: max(v.Start, v.CoveredFrom), RemoteEnd: v.End, ExpireBelow: math.MaxInt64}
	if v.Fenced {
		r.RemoteStart, r.RemoteEnd = 0, 0
	}
	if primaryKey {
		r.RemoteEnd = min(r.RemoteEnd, applied)
		r.ExpireBelow = min(AgeExpiryBelow(primaryKey, newestSnapshot), applied)
		if v.Fenced {
			r.ExpireBelow = 0 // the snapshots may go with the cut
		}
	}
	return r
}

// AgeExpiryBelow is where a table's age retention (log.ttl) stops, locally
// and in the remote log: a log table's records expire anywhere, a
// primary-key table's changelog only below its newest committed KV snapshot
// (newestSnapshot; 0 when there is none, and then nothing expires), since
// a replica without the changelog restores from that snapshot.
func AgeExpiryBelow(primaryKey bool, newestSnapshot int64) int64 {
	if !primaryKey {
		return math.MaxInt64
	}
	return newestSnapshot
}

// LakeHold is where age retention (log.ttl) stops for a lake-enabled
// table, locally and in the remote log: below expireBelow, and below the
// offset the lake holds the bucket's records to (lakeOffset), so the log
// never deletes a record the lake has not committed (docs/lake.md). A
// table without the lake keeps expireBelow.
func LakeHold(expireBelow int64, lakeEnabled bool, lakeOffset int64) int64 {
	if !lakeEnabled {
		return expireBelow
	}
	return min(expireBelow, lakeOffset)
}

// LostCommitted says whether a follower's fetch shows that this leader
// lost records committed before its epoch: a follower whose last batch is
// of an earlier epoch names a high watermark past where this epoch
// started, so the leader's log ends before records that were committed
// (durable on it, as on every ISR member, before), as a disk that drops
// fsynced writes does. Serving would make the follower truncate them; the
// leader reports the loss instead, and an in-sync replica that has them
// leads. A follower without a batch (last epoch -1: new, or started over
// at a snapshot's offset) says nothing of earlier epochs; after an unclean
// election a leader may lack committed records by choice; a bucket of one
// replica has no other copy to prefer.
func (b *Bucket) LostCommitted(lastFetchedEpoch int32, followerHW int64, afterUncleanElection bool) bool {
	if b.role != RoleLeader || lastFetchedEpoch < 0 || lastFetchedEpoch >= b.leaderEpoch ||
		afterUncleanElection || len(b.replicas) < 2 || b.lostTailFrom >= 0 {
		return false
	}
	return followerHW > b.epochStart
}

// LostTail records that the replica's log lost its tail from offset from:
// batches it had made durable are gone after a restart (a disk that
// dropped fsynced writes; logstore.Log.LostTail). The log is damaged from
// there on, and more: as a leader it would tell followers to truncate
// batches that were acknowledged, and new writes would take their
// offsets. So until the loss is cut away (Truncated at or below from) the
// replica refuses writes and follower fetches (ErrNotLeader, retriable)
// and reports the damage (ReportLostTail); a lost tail needs no other
// in-sync copy to be cut away (MayCutDamaged): nothing after it is left.
func (b *Bucket) LostTail(from int64) {
	assertf(from >= 0, "a lost tail from offset %d", from)
	b.lostTailFrom = from
}

// TailLost says where the log lost its tail, ok false when it did not or
// the loss was cut away.
func (b *Bucket) TailLost() (from int64, ok bool) { return b.lostTailFrom, b.lostTailFrom >= 0 }

// ReportLostTail decides, once the replica knows its assignment, what
// becomes of a lost tail: with a peer to fetch it from again, the replica
// reports the damage (true), which takes it out of the ISR and its
// leadership; a bucket of one replica has no other copy: it carries on
// with what is left, the loss forgotten (false).
func (b *Bucket) ReportLostTail() bool {
	if b.lostTailFrom < 0 {
		return false
	}
	if len(b.replicas) < 2 {
		b.lostTailFrom = -1
		return false
	}
	return true
}

func (b *Bucket) tailLostError() error {
	if b.lostTailFrom < 0 {
		return nil
	}
	return fmt.Errorf("%w: the replica on node %d lost its log's tail from offset %d and is handing leadership to an in-sync replica",
		ErrNotLeader, b.cfg.Self, b.lostTailFrom)
}
