package replica

import (
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// isrProposalTimeout bounds one AdjustIsr round trip.
const isrProposalTimeout = 5 * time.Second

// maybeExpandISRLocked asks to add a follower that has caught up with the
// high watermark in this epoch.
func (r *Replica) maybeExpandISRLocked(follower uint32) {
	f := r.followers[follower]
	if r.pendingISR != nil || f == nil || f.leo < r.hw || slices.Contains(r.isr, follower) {
		return
	}
	r.proposeISRLocked(inAssignmentOrder(r.replicas, append(slices.Clone(r.isr), follower)))
}

// checkISR asks to remove followers that have not caught up with the
// leader's end for ReplicaLagMax.
func (r *Replica) checkISR() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role != roleLeader || r.pendingISR != nil || r.closed {
		return
	}
	now := time.Now()
	keep := []uint32{}
	for _, id := range r.isr {
		if id == r.mgr.cfg.NodeID {
			keep = append(keep, id)
			continue
		}
		if f := r.followers[id]; f != nil && now.Sub(f.caughtUpAt) <= r.mgr.cfg.ReplicaLagMax {
			keep = append(keep, id)
		}
	}
	if !slices.Contains(keep, r.mgr.cfg.NodeID) {
		keep = append(keep, r.mgr.cfg.NodeID)
	}
	keep = inAssignmentOrder(r.replicas, keep)
	if !slices.Equal(keep, r.isr) {
		r.mgr.log.Warn("shrinking ISR: followers lagging", "bucket", r.id.String(), "isr", r.isr, "new_isr", keep,
			"replica_lag_max", r.mgr.cfg.ReplicaLagMax)
		r.proposeISRLocked(keep)
	}
}

// proposeISRLocked sends an ISR change to the controller. Until it is
// answered, the high watermark counts the larger of the two ISRs; the
// answer (or the metadata stream) installs the committed one.
func (r *Replica) proposeISRLocked(isr []uint32) {
	r.pendingISR = isr
	change := &pb.AdjustIsr{TableId: r.id.TableID, Bucket: r.id.Bucket, LeaderId: r.mgr.cfg.NodeID,
		LeaderEpoch: r.leaderEpoch, BucketEpoch: r.bucketEpoch, Isr: isr}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), isrProposalTimeout)
		defer cancel()
		b, err := r.mgr.cfg.Meta.AdjustIsr(ctx, change)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !slices.Equal(r.pendingISR, isr) {
			return
		}
		r.pendingISR = nil
		if err != nil {
			r.mgr.log.Info("ISR change not applied", "bucket", r.id.String(), "isr", isr, "err", err)
			return
		}
		if b.BucketEpoch > r.bucketEpoch && b.LeaderEpoch == r.leaderEpoch {
			r.isr, r.bucketEpoch = slices.Clone(b.Isr), b.BucketEpoch
			r.mgr.log.Info("ISR changed", "bucket", r.id.String(), "isr", b.Isr, "bucket_epoch", b.BucketEpoch)
		}
		r.maybeAdvanceHWLocked()
	}()
}

// inAssignmentOrder orders ids as they appear in replicas.
func inAssignmentOrder(replicas, ids []uint32) []uint32 {
	out := make([]uint32, 0, len(ids))
	for _, r := range replicas {
		if slices.Contains(ids, r) {
			out = append(out, r)
		}
	}
	return out
}
