package metastate

import (
	"slices"

	"github.com/floedb/floe/transport/pb"
)

// adjustIsr is a bucket leader's compare-and-set of its ISR. A request from
// anyone but the current leader at the current leader epoch, or at another
// bucket epoch, is FENCED; an ISR that is empty, repeats a node, leaves out
// the leader or names a node that is not an assigned replica is
// INVALID_REQUEST. The new ISR is stored in assignment order, and the bucket
// epoch is raised. An ISR equal to the current one changes nothing: the
// result carries the bucket as it is, Unchanged.
func (a *applier) adjustIsr(c *pb.AdjustIsr) (*pb.CommandResult, error) {
	b, err := a.bucketRecord(c.GetTableId(), c.GetBucket())
	if err != nil {
		return nil, err
	}
	if err := checkIsrFence(b, c); err != nil {
		return nil, err
	}
	isr, err := checkIsr(b, c.GetIsr())
	if err != nil {
		return nil, err
	}
	if err := a.checkMemberEpochs(b, isr, c.GetMemberEpochs()); err != nil {
		return nil, err
	}
	if slices.Equal(isr, b.GetIsr()) {
		return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}, Unchanged: true}, nil
	}
	b.Isr = isr
	b.BucketEpoch++
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}}, nil
}

// checkIsrFence refuses an AdjustIsr that is not from the bucket's current
// leader at its current epochs.
func checkIsrFence(b *pb.BucketRecord, c *pb.AdjustIsr) error {
	if err := checkLeader(b, c.GetLeaderId(), c.GetLeaderEpoch()); err != nil {
		return err
	}
	if c.GetBucketEpoch() != b.GetBucketEpoch() {
		return errorf(codeFenced, "table %d bucket %d: bucket epoch %d, current is %d",
			b.GetTableId(), b.GetBucket(), c.GetBucketEpoch(), b.GetBucketEpoch())
	}
	return nil
}

// checkIsr validates a proposed ISR and returns it in assignment order.
func checkIsr(b *pb.BucketRecord, isr []uint32) ([]uint32, error) {
	if len(isr) == 0 {
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: empty ISR", b.GetTableId(), b.GetBucket())
	}
	for i, id := range isr {
		// Every node checked is a replica, so a repeat shows up within
		// len(replicas)+1 nodes: the work is bounded by the replicas.
		if !slices.Contains(b.GetReplicas(), id) {
			return nil, errorf(codeInvalidRequest, "table %d bucket %d: node %d in the ISR is not an assigned replica",
				b.GetTableId(), b.GetBucket(), id)
		}
		if slices.Contains(isr[:i], id) {
			return nil, errorf(codeInvalidRequest, "table %d bucket %d: node %d listed twice in the ISR",
				b.GetTableId(), b.GetBucket(), id)
		}
	}
	if !slices.Contains(isr, b.GetLeader()) {
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: the ISR leaves out the leader, node %d",
			b.GetTableId(), b.GetBucket(), b.GetLeader())
	}
	out := make([]uint32, 0, len(isr))
	for _, r := range b.GetReplicas() {
		if slices.Contains(isr, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkMemberEpochs refuses (INELIGIBLE_REPLICA) an ISR change that adds a member
// registered again since the fetches the leader judged it by: it restarted
// or was wiped, and may have lost what they reported (Kafka's KIP-903). An
// entry for a node the change does not add is ignored; an added member
// without one is not checked. It runs after the fence checks, so the
// refusal also says the bucket is still at the change's epochs: unlike
// FENCED, it tells the leader that the change was not, and will not be,
// applied.
func (a *applier) checkMemberEpochs(b *pb.BucketRecord, isr []uint32, epochs []*pb.MemberEpoch) error {
	for i, e := range epochs {
		id := e.GetNodeId()
		// Every node checked is in the ISR, so the work is bounded by it.
		if !slices.Contains(isr, id) || slices.Contains(b.GetIsr(), id) {
			continue
		}
		if slices.ContainsFunc(epochs[:i], func(o *pb.MemberEpoch) bool { return o.GetNodeId() == id }) {
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d has two member epochs",
				b.GetTableId(), b.GetBucket(), id)
		}
		n := &pb.NodeRecord{}
		ok, err := getRecord(a.tx.Bucket(bucketNodes), nodeKey(id), n)
		if err != nil {
			return err
		}
		switch {
		case !ok:
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d is not registered", b.GetTableId(), b.GetBucket(), id)
		case n.GetNodeEpoch() > e.GetNodeEpoch():
			return errorf(codeIneligible, "table %d bucket %d: node %d registered again at node epoch %d, after the fetches at node epoch %d that the leader judged it by",
				b.GetTableId(), b.GetBucket(), id, n.GetNodeEpoch(), e.GetNodeEpoch())
		case n.GetNodeEpoch() < e.GetNodeEpoch():
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d at node epoch %d, newer than its registration at %d",
				b.GetTableId(), b.GetBucket(), id, e.GetNodeEpoch(), n.GetNodeEpoch())
		}
	}
	return nil
}
