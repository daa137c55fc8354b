package replica

import (
	"slices"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/transport/pb"
)

// assign hands the committed metadata of the bucket to the protocol core
// and performs what it decides: start the leader epoch in the log, wake
// waiting writes, send an ISR proposal.
func (r *Replica) assign(b *pb.BucketRecord, index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.remote.fence.Store(b.RemoteFenceEpoch)
	lakeMoved := r.remote.lakeOffset.Swap(b.LakeOffset) != b.LakeOffset
	r.noteRemoteLog(b.RemoteLog)
	if lakeMoved {
		r.refreshRetention() // more of a lake-enabled log may expire
	}
	r.setKVSnapshots(b.KvSnapshots)
	r.uncleanElections.Store(b.UncleanElections)
	self := r.mgr.cfg.NodeID
	r.learner.Store(b.Move != nil && !slices.Contains(b.Move.Original, self) && !slices.Contains(b.Isr, self))
	wasLeading, isrBefore := r.leadingLocked(), len(r.core.ISR())
	eff := r.core.Assign(replication.Assignment{Leader: b.Leader, LeaderEpoch: b.LeaderEpoch, BucketEpoch: b.BucketEpoch,
		Replicas: b.Replicas, ISR: b.Isr, Index: int64(index)}, r.log.EndOffset(), time.Now())
	r.performLocked(eff)
	if eff.StartEpoch {
		r.mgr.events.leaderElections.Add(1)
	} else if wasLeading {
		// A new leader's ISR is its election's, not a change it saw.
		r.noteISRLocked(isrBefore)
	}
	r.mgr.followGen.Add(1)
	role, leader, epoch, hw := r.stateLocked()
	switch {
	case eff.StaleMetadata:
		r.mgr.log.Debug("ignoring bucket metadata older than this node's registration", "bucket", r.id.String(),
			"metadata_index", index, "node_epoch", r.core.NodeEpoch())
	case eff.StaleFollowership:
		r.mgr.log.Warn("not following bucket: the log already holds a newer leader epoch than the metadata names; waiting for newer metadata",
			"bucket", r.id.String(), "leader_epoch", b.LeaderEpoch)
	case eff.StaleLeadership:
		r.mgr.log.Warn("not leading bucket: the log already holds this leader epoch from before a restart; waiting for a newer one",
			"bucket", r.id.String(), "leader_epoch", epoch)
	case eff.StartEpoch:
		r.mgr.log.Info("leading bucket", "bucket", r.id.String(), "leader_epoch", epoch, "isr", b.Isr,
			"end_offset", r.log.EndOffset(), "high_watermark", hw)
	case wasLeading && role != replication.RoleLeader:
		r.mgr.log.Info("stopped leading bucket", "bucket", r.id.String(), "new_leader", leader, "leader_epoch", epoch)
	}
}

// setNodeEpoch tells the core this node registered (again) at node epoch
// e: metadata older than e is no longer acted on.
func (r *Replica) setNodeEpoch(e uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if int64(e) > r.core.NodeEpoch() {
		r.core.SetNodeEpoch(int64(e))
	}
}

// leadingLocked reports whether the replica leads, with r.mu held.
func (r *Replica) leadingLocked() bool {
	role, _, _, _ := r.stateLocked()
	return role == replication.RoleLeader
}

// performLocked carries out the effects of a transition of the core, with
// r.mu held.
func (r *Replica) performLocked(eff replication.Effects) {
	if eff.StartEpoch {
		_, _, epoch := r.core.Role()
		if err := r.log.AssignEpoch(epoch); err != nil {
			// The core checked the epoch is newer than any in the log, so
			// this is an I/O failure: the replica cannot lead safely.
			r.mgr.log.Error("cannot start leader epoch", "bucket", r.id.String(), "leader_epoch", epoch, "err", err)
			if storageFailure(err) {
				r.failLocked(err)
			}
			return
		}
	}
	if eff.RoleChanged {
		r.wakeAllHWWaitersLocked()
		r.catchUp.stopLocked() // what it brings was for the old role
		if r.kv != nil {
			// The rows a leader writes are the ones its next upserts of
			// those keys merge against and lookups, which come to it, ask
			// for.
			r.kv.SetLeading(r.leadingLocked())
		}
	}
	if eff.HWAdvanced {
		r.wakeHWWaitersLocked()
		if r.kv != nil {
			r.kv.HWMoved()
		}
	}
	if eff.ISRChanged {
		r.mgr.log.Info("ISR changed", "bucket", r.id.String(), "isr", r.core.ISR(), "bucket_epoch", r.core.BucketEpoch())
	}
	if eff.Propose != nil {
		r.sendProposalLocked(eff.Propose)
	}
	r.hwSeen.Store(r.core.HW())
	r.proposing.Store(r.core.Pending() != nil)
	if eff.RoleChanged || eff.HWAdvanced {
		r.mgr.notify()
	}
}
