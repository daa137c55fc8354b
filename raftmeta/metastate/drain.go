package metastate

import (
	"slices"

	"github.com/floedb/floe/transport/pb"
)

// drainNode is an operator's drain of a tablet node before a planned stop:
// the node is marked draining, and every bucket it leads moves to another
// live in-sync replica where there is one (drainBucket). The mark makes
// every later election pass the node over while another replica may lead
// (preferred), so a fencing round or a clean election does not hand the
// leaderships back before the node stops; its next registration clears it.
// With cancel, only the mark is cleared.
//
// A bucket that cannot move is listed with its reason, and the command
// still succeeds: the mark and the moves that could be made are what the
// operator asked for, and the CLI decides what a partial drain means. The
// result is Unchanged when nothing changed.
func (a *applier) drainNode(c *pb.DrainNode) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "drain node: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	id := c.GetNodeId()
	n := &pb.NodeRecord{}
	ok, err := getRecord(a.tx.Bucket(bucketNodes), nodeKey(id), n)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errorf(codeUnknownNode, "drain node: node %d is not registered", id)
	case !hasRole(n, RoleTablet):
		return nil, errorf(codeInvalidRequest, "drain node: node %d has no tablet role: it leads no buckets", id)
	}
	result := &pb.DrainResult{Node: n}
	done := &pb.CommandResult{Value: &pb.CommandResult_Drain{Drain: result}}
	if c.GetCancel() {
		if !n.GetDraining() && !n.GetDecommissioning() {
			done.Unchanged = true
			return done, nil
		}
		n.Draining, n.Decommissioning = false, false
		if err := a.putNode(n); err != nil {
			return nil, err
		}
		return done, nil
	}

	x, err := a.bucketIndex()
	if err != nil {
		return nil, err
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	live := func(r uint32) bool { return slices.Contains(c.GetLiveNodes(), r) }
	moved, err := a.changeBucketsOf(x.bucketsOf([]uint32{id}, false), func(b *pb.BucketRecord) bool {
		if b.GetLeader() != id {
			return false
		}
		e := &pb.BucketDrain{Bucket: b}
		if refusal := drainBucket(b, live, draining); refusal != nil {
			e.Code, e.Error = refusal.Code, refusal.Msg
		} else {
			e.Moved = true
		}
		result.Buckets = append(result.Buckets, e)
		return e.Moved
	})
	if err != nil {
		return nil, err
	}
	if !n.GetDraining() || (c.GetDecommission() && !n.GetDecommissioning()) {
		n.Draining = true
		n.Decommissioning = n.GetDecommissioning() || c.GetDecommission()
		if err := a.putNode(n); err != nil {
			return nil, err
		}
	} else if moved == 0 {
		done.Unchanged = true
	}
	return done, nil
}

// drainBucket moves the leadership of one bucket off its leader, in place:
// the first replica in assignment order that is in the ISR, live and not
// the leader takes it (one that is not draining itself, if there is one),
// and the leader and bucket epochs rise. The ISR stays as it is: the old
// leader is in sync and goes on as a follower. With no such replica the
// bucket is left unchanged and refused (NOT_ENOUGH_REPLICAS): nothing is
// ever elected outside the ISR.
func drainBucket(b *pb.BucketRecord, live, draining func(id uint32) bool) *Error {
	leader := b.GetLeader()
	next := electable(b, func(r uint32) bool { return r == leader || !live(r) }, draining)
	if next == 0 {
		return errorf(codeNotEnoughReplicas, "bucket %d has no other live in-sync replica (ISR %v, replicas %v)",
			b.GetBucket(), b.GetIsr(), b.GetReplicas())
	}
	b.Leader = next
	b.LeaderEpoch++
	b.BucketEpoch++
	return nil
}
