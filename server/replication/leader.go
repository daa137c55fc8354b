package replication

import (
	"fmt"
	"slices"
)

// Acks values of a write.
const (
	AcksAll    = -1
	AcksNone   = 0
	AcksLeader = 1
)

// CheckWrite admits a write: it returns the leader epoch to append it in,
// or ErrNotLeader (also while a lost tail is not cut away: LostTail), or
// for acks=all with a committed ISR below min.insync.replicas
// ErrNotEnoughReplicas (nothing may be appended).
func (b *Bucket) CheckWrite(acks int) (int32, error) {
	if b.role != RoleLeader {
		return 0, fmt.Errorf("%w: node %d is %s of leader epoch %d (leader: node %d)", ErrNotLeader, b.cfg.Self, b.role, b.leaderEpoch, b.leader)
	}
	if err := b.tailLostError(); err != nil {
		return 0, err
	}
	if acks == AcksAll && len(b.isr) < b.cfg.MinISR {
		return 0, fmt.Errorf("%w: %d in-sync replicas %v, min.insync.replicas is %d", ErrNotEnoughReplicas, len(b.isr), b.isr, b.cfg.MinISR)
	}
	return b.leaderEpoch, nil
}

// AckAll decides an acks=all write whose last offset is last, appended in
// epoch: done once the high watermark passed it and the committed ISR
// still has min.insync.replicas members; ErrNotEnoughReplicasAfterAppend
// when it passed but the ISR shrank below that; ErrNotLeader when the
// replica no longer leads that epoch (the outcome is then unknown to the
// writer); otherwise not done yet: wait for HWAdvanced or RoleChanged.
func (b *Bucket) AckAll(last int64, epoch int32) (bool, error) {
	switch {
	case b.role != RoleLeader || b.leaderEpoch != epoch:
		return false, fmt.Errorf("%w: the leader changed from epoch %d while the write waited; its outcome is unknown", ErrNotLeader, epoch)
	case b.hw <= last:
		return false, nil
	case len(b.isr) < b.cfg.MinISR:
		return false, fmt.Errorf("%w: offset %d is committed on ISR %v, below min.insync.replicas %d",
			ErrNotEnoughReplicasAfterAppend, last, b.isr, b.cfg.MinISR)
	}
	return true, nil
}

// DurableEnd records that the replica's own log is durable up to end (an
// fsync finished). On a leader it may move the high watermark.
func (b *Bucket) DurableEnd(end int64) Effects {
	if end <= b.durableEnd {
		return Effects{}
	}
	b.durableEnd = end
	eff := b.maybeAdvanceHW()
	b.check()
	return eff
}

// isrForHW is the ISR the high watermark waits for: the union of the
// committed ISR and a proposed one, so that neither a shrink nor an
// expansion whose outcome is unknown can let the watermark pass a member.
func (b *Bucket) isrForHW() []uint32 {
	out := slices.Clone(b.isr)
	if b.pending != nil {
		for _, id := range b.pending.ISR {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// maybeAdvanceHW moves the leader's high watermark to the smallest durable
// end over the ISR for the high watermark, when that is higher. A member
// that has not fetched in this epoch holds it where it is.
func (b *Bucket) maybeAdvanceHW() Effects {
	if b.role != RoleLeader {
		return Effects{}
	}
	hw := b.durableEnd
	for _, id := range b.isrForHW() {
		if id == b.cfg.Self {
			continue
		}
		f := b.followers[id]
		if f == nil || f.end < 0 {
			return Effects{}
		}
		hw = min(hw, f.end)
	}
	if hw <= b.hw {
		return Effects{}
	}
	for _, id := range b.isrForHW() {
		if f := b.followers[id]; id != b.cfg.Self {
			assertf(f.end >= hw, "high watermark %d past ISR member %d's durable end %d", hw, id, f.end)
		}
	}
	b.hw = hw
	return Effects{HWAdvanced: true}
}
