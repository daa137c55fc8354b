package replica

import (
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/transport/pb"
)

// assign hands the committed metadata of the bucket to the protocol core
// and performs what it decides: start the leader epoch in the log, wake
// waiting writes, send an ISR proposal.
func (r *Replica) assign(b *pb.BucketRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	wasLeading := r.leadingLocked()
	eff := r.core.Assign(replication.Assignment{Leader: b.Leader, LeaderEpoch: b.LeaderEpoch, BucketEpoch: b.BucketEpoch,
		Replicas: b.Replicas, ISR: b.Isr}, r.log.EndOffset(), time.Now())
	r.performLocked(eff)
	role, leader, epoch, hw := r.stateLocked()
	switch {
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
			r.failLocked(err)
			return
		}
	}
	if eff.RoleChanged {
		r.wakeAllHWWaitersLocked()
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
	if eff.RoleChanged || eff.HWAdvanced {
		r.mgr.notify()
	}
}
