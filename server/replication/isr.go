package replication

import (
	"slices"
	"time"
)

// maybeExpandISR proposes adding a follower whose durable end reached both
// the high watermark and the start of the current leader epoch: below the
// epoch's start its log may still hold a tail of an earlier epoch that this
// leader does not have (KAFKA-7128).
func (b *Bucket) maybeExpandISR(id uint32, now time.Time) Effects {
	f := b.followers[id]
	if b.pending != nil || f == nil || slices.Contains(b.isr, id) || f.end < b.hw || f.end < b.epochStart {
		return Effects{}
	}
	return b.propose(inAssignmentOrder(b.replicas, append(slices.Clone(b.isr), id)), now)
}

// Tick runs a leader's periodic work at now: resend a proposal whose
// outcome is unknown once its retry time comes, or propose removing ISR
// followers that have not caught up for ReplicaLagMax.
func (b *Bucket) Tick(now time.Time) Effects {
	due := b.TickDue()
	eff := b.tick(now)
	assertf(eff.Propose == nil || due, "Tick proposed an ISR change when TickDue said nothing was due")
	return eff
}

func (b *Bucket) tick(now time.Time) Effects {
	if b.role != RoleLeader {
		return Effects{}
	}
	if p := b.pending; p != nil {
		if p.inFlight || now.Before(p.retryAt) {
			return Effects{}
		}
		p.inFlight = true
		p.Attempts++
		return Effects{Propose: p}
	}
	keep := make([]uint32, 0, len(b.isr))
	for _, id := range b.isr {
		f := b.followers[id]
		if id == b.cfg.Self || (f != nil && now.Sub(f.caughtUpAt) <= b.cfg.ReplicaLagMax) {
			keep = append(keep, id)
		}
	}
	if !slices.Contains(keep, b.cfg.Self) {
		keep = append(keep, b.cfg.Self)
	}
	keep = inAssignmentOrder(b.replicas, keep)
	if slices.Equal(keep, b.isr) {
		return Effects{}
	}
	return b.propose(keep, now)
}

// TickDue reports whether Tick may do anything now: only a leader does,
// and only with a proposal pending or ISR members besides itself, which
// may lag. A node calls Tick on many replicas; this lets it skip the rest.
func (b *Bucket) TickDue() bool {
	if b.role != RoleLeader {
		return false
	}
	return b.pending != nil || len(b.isr) != 1 || b.isr[0] != b.cfg.Self
}

// Lagging lists the ISR followers Tick would propose out now.
func (b *Bucket) Lagging(now time.Time) []uint32 {
	var out []uint32
	for _, id := range b.isr {
		if f := b.followers[id]; id != b.cfg.Self && (f == nil || now.Sub(f.caughtUpAt) > b.cfg.ReplicaLagMax) {
			out = append(out, id)
		}
	}
	return out
}

// propose makes isr the pending proposal and asks the caller to send it.
func (b *Bucket) propose(isr []uint32, now time.Time) Effects {
	b.nextID++
	b.pending = &Proposal{ID: b.nextID, LeaderEpoch: b.leaderEpoch, BucketEpoch: b.bucketEpoch, ISR: isr,
		NodeEpochs: b.nodeEpochs(isr), Attempts: 1, inFlight: true, retryAt: now}
	b.check()
	return Effects{Propose: b.pending}
}

// nodeEpochs are the node epochs of isr's members as the leader knows
// them, nil when it knows none (callers that send no node epochs keep
// proposals, and so request ids, as before).
func (b *Bucket) nodeEpochs(isr []uint32) []int64 {
	out := make([]int64, len(isr))
	known := false
	for i, id := range isr {
		switch f := b.followers[id]; {
		case id == b.cfg.Self:
			out[i] = b.cfg.NodeEpoch
		case f != nil:
			out[i] = f.nodeEpoch
		}
		known = known || out[i] != 0
	}
	if !known {
		return nil
	}
	return out
}

// ProposalOutcome reports how the attempt of proposal id ended; committed
// is the bucket as the controller answered (Committed only). An outcome of
// a proposal that is no longer pending (answered twice, or resolved by the
// metadata stream meanwhile) changes nothing.
func (b *Bucket) ProposalOutcome(id uint64, o Outcome, committed *Assignment, now time.Time) Effects {
	p := b.pending
	if p == nil || p.ID != id || b.role != RoleLeader {
		return Effects{}
	}
	var eff Effects
	switch o {
	case Committed:
		b.pending = nil
		if committed != nil && committed.LeaderEpoch == b.leaderEpoch && committed.BucketEpoch > b.bucketEpoch {
			eff.ISRChanged = !slices.Equal(b.isr, committed.ISR)
			b.isr, b.bucketEpoch = slices.Clone(committed.ISR), committed.BucketEpoch
		}
		eff.Merge(b.maybeAdvanceHW())
	case Refused:
		b.pending = nil
		eff.Merge(b.maybeAdvanceHW())
	case Unknown, Fenced:
		// Keep the larger ISR and resend the same proposal later: an
		// attempt may be committed, and only the metadata stream or the
		// controller's answer to a retry can say (see Fenced).
		p.inFlight = false
		delay := proposalRetryMin << min(p.Attempts-1, 5)
		p.retryAt = now.Add(min(delay, proposalRetryMax))
	}
	b.check()
	return eff
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
