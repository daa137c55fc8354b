package replication

import (
	"fmt"
	"slices"
)

// check asserts the safety properties after a step.
func (w *simWorld) check() error {
	if w.ctrl.leaderEpoch < w.ctrlLeaderEpoch || w.ctrl.bucketEpoch < w.ctrlBucketEpoch {
		return fmt.Errorf("controller epochs went back from %d/%d to %d/%d", w.ctrlLeaderEpoch, w.ctrlBucketEpoch, w.ctrl.leaderEpoch, w.ctrl.bucketEpoch)
	}
	w.ctrlLeaderEpoch, w.ctrlBucketEpoch = w.ctrl.leaderEpoch, w.ctrl.bucketEpoch
	var live []*simNode
	for _, n := range w.nodes {
		if n.live() {
			live = append(live, n)
			if err := w.checkNode(n); err != nil {
				return err
			}
			if err := n.log.checkCommitted(n.core.HW()); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
		}
	}
	if err := w.checkAcked(live); err != nil {
		return err
	}
	return checkAgreement(live)
}

// checkNode: epochs only grow within a run, the high watermark never
// passes the durable end and never moves back on a leader within an epoch.
func (w *simWorld) checkNode(n *simNode) error {
	role, epoch := n.role()
	be, hw := n.core.BucketEpoch(), n.core.HW()
	if epoch < n.seenLeaderEpoch || be < n.seenBucketEpoch {
		return fmt.Errorf("node %d epochs went back from %d/%d to %d/%d", n.id, n.seenLeaderEpoch, n.seenBucketEpoch, epoch, be)
	}
	n.seenLeaderEpoch, n.seenBucketEpoch = epoch, be
	if hw > n.log.synced {
		return fmt.Errorf("node %d high watermark %d past its durable end %d", n.id, hw, n.log.synced)
	}
	if role == RoleLeader {
		if epoch == n.seenHWEpoch && hw < n.seenHW {
			return fmt.Errorf("node %d high watermark moved back from %d to %d in epoch %d", n.id, n.seenHW, hw, epoch)
		}
		n.seenHW, n.seenHWEpoch = hw, epoch
	}
	return nil
}

// checkAcked: no acknowledged write is lost. Every running ISR member of
// the incarnation the controller knows holds it, every leader of the epoch
// that acknowledged it or a later one holds it, and so does every replica
// whose high watermark passed it.
func (w *simWorld) checkAcked(live []*simNode) error {
	for _, n := range live {
		inISR := slices.Contains(w.ctrl.isr, n.id) && w.ctrl.regs[n.id].incarnation == n.incarnation
		role, epoch := n.role()
		hw := n.core.HW()
		for _, o := range w.ackedOffsets {
			ack := w.acked[o]
			e := ack.entry
			if !inISR && o >= hw && (role != RoleLeader || epoch < ack.epoch) {
				continue
			}
			if o >= n.log.end() {
				return fmt.Errorf("acknowledged offset %d (epoch %d, acknowledged in %d) lost on node %d (in ISR %v, %s of epoch %d, hw %d, log end %d)",
					o, e.epoch, ack.epoch, n.id, inISR, role, epoch, hw, n.log.end())
			}
			if got := n.log.entries[o]; got != e {
				return fmt.Errorf("acknowledged offset %d holds %+v on node %d, want %+v (in ISR %v, %s of epoch %d, hw %d)",
					o, got, n.id, e, inISR, role, epoch, hw)
			}
		}
	}
	return nil
}

// checkAgreement: no divergence below the high watermark: any two replicas
// agree on every offset below both their high watermarks.
func checkAgreement(live []*simNode) error {
	for i, a := range live {
		for _, b := range live[i+1:] {
			below := min(a.core.HW(), b.core.HW())
			for o := range below {
				if a.log.entries[o] != b.log.entries[o] {
					return fmt.Errorf("nodes %d and %d diverge at offset %d below their high watermarks %d and %d: %+v vs %+v",
						a.id, b.id, o, a.core.HW(), b.core.HW(), a.log.entries[o], b.log.entries[o])
				}
			}
		}
	}
	return nil
}
