package replica

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// isrProposalTimeout bounds one AdjustIsr round trip.
const isrProposalTimeout = 5 * time.Second

// checkISR runs the core's periodic ISR upkeep: it proposes removing
// followers that lag and resends proposals whose outcome is unknown.
func (r *Replica) checkISR(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.core.TickDue() {
		return
	}
	if lagging := r.core.Lagging(now); len(lagging) > 0 && r.core.Pending() == nil && r.leadingLocked() {
		r.mgr.log.Warn("shrinking ISR: followers lagging", "bucket", r.id.String(), "isr", r.core.ISR(), "lagging", lagging,
			"replica_lag_max", r.mgr.cfg.ReplicaLagMax)
	}
	r.performLocked(r.core.Tick(now))
}

// sendProposalLocked sends an ISR proposal to the controller and reports
// its outcome to the core. Every attempt of one proposal carries the same
// request id, so the controller answers a retry with the first attempt's
// result: an outcome the leader did not learn is never mistaken for a
// refusal.
func (r *Replica) sendProposalLocked(p *replication.Proposal) {
	change := &pb.AdjustIsr{TableId: r.id.TableID, Bucket: r.id.Bucket, LeaderId: r.mgr.cfg.NodeID,
		LeaderEpoch: p.LeaderEpoch, BucketEpoch: p.BucketEpoch, Isr: p.ISR, MemberEpochs: memberEpochs(p)}
	requestID := []byte(fmt.Sprintf("%s/%d/%s", r.id, r.mgr.cfg.NodeID, p.Key()))
	id := p.ID
	r.mgr.goBackground(func() {
		ctx, cancel := r.mgr.untilStopped(context.Background())
		defer cancel()
		ctx, cancelAttempt := context.WithTimeout(ctx, isrProposalTimeout)
		defer cancelAttempt()
		b, err := r.mgr.cfg.Meta.AdjustIsr(ctx, change, requestID)
		outcome, committed := proposalOutcome(b, err)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed {
			return
		}
		if outcome != replication.Committed {
			r.mgr.log.Info("ISR change not applied", "bucket", r.id.String(), "isr", change.Isr, "outcome", outcomeName(outcome), "err", err)
		}
		isrBefore := len(r.core.ISR())
		r.performLocked(r.core.ProposalOutcome(id, outcome, committed, time.Now()))
		r.noteISRLocked(isrBefore)
	})
}

// memberEpochs lists the node epochs the proposal knows for its ISR's
// members (0, unknown, is left out): the controller refuses to add a member
// registered again since the fetches that made it eligible.
func memberEpochs(p *replication.Proposal) []*pb.MemberEpoch {
	var out []*pb.MemberEpoch
	for i, id := range p.ISR {
		if i < len(p.NodeEpochs) && p.NodeEpochs[i] > 0 {
			out = append(out, &pb.MemberEpoch{NodeId: id, NodeEpoch: uint64(p.NodeEpochs[i])})
		}
	}
	return out
}

// proposalOutcome classifies an AdjustIsr answer: a refusal only when the
// controller says the change was not applied (INVALID_REQUEST,
// UNKNOWN_TABLE, INELIGIBLE_REPLICA); FENCED says only that the bucket
// moved; anything else without an answer is unknown.
func proposalOutcome(b *pb.BucketRecord, err error) (replication.Outcome, *replication.Assignment) {
	if err == nil && b != nil {
		return replication.Committed, &replication.Assignment{Leader: b.Leader, LeaderEpoch: b.LeaderEpoch,
			BucketEpoch: b.BucketEpoch, Replicas: b.Replicas, ISR: b.Isr}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.Code {
		case pb.ErrorCode_ERROR_CODE_FENCED:
			return replication.Fenced, nil
		case pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, pb.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA:
			return replication.Refused, nil
		}
	}
	return replication.Unknown, nil
}

func outcomeName(o replication.Outcome) string {
	switch o {
	case replication.Committed:
		return "committed"
	case replication.Refused:
		return "refused"
	case replication.Fenced:
		return "fenced"
	}
	return "unknown"
}
