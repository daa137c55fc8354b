package metastate

import (
	"slices"

	"github.com/floedb/floe/transport/pb"
)

// maxGoneNodes bounds the node ids of one FenceNodes.
const maxGoneNodes = 1 << 16

// fenceNodes applies the controller's list of gone tablet nodes to every
// bucket; fenceBucket says how. The result is Unchanged when no bucket
// changed, so the controller may send the same list again at no cost.
func (a *applier) fenceNodes(c *pb.FenceNodes) (*pb.CommandResult, error) {
	if len(c.GetGone()) > maxGoneNodes {
		return nil, errorf(codeInvalidRequest, "fence nodes: %d node ids exceed %d", len(c.GetGone()), maxGoneNodes)
	}
	gone := make(map[uint32]bool, len(c.GetGone()))
	for _, id := range c.GetGone() {
		gone[id] = true
	}
	x, err := a.bucketIndex()
	if err != nil {
		return nil, err
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	// Only a bucket that has a gone node among its replicas, or is offline,
	// can change.
	changed, err := a.changeBucketsOf(x.bucketsOf(c.GetGone(), true), func(b *pb.BucketRecord) bool {
		return fenceBucket(b, func(id uint32) bool { return gone[id] }, draining)
	})
	if err != nil {
		return nil, err
	}
	return &pb.CommandResult{Unchanged: changed == 0}, nil
}

// fenceBucket takes the nodes gone reports (dead or left, their data kept)
// out of one bucket, in place, and reports whether the bucket changed. It
// never elects a replica outside the ISR, and every change raises the bucket
// epoch; a new leader (or none) raises the leader epoch too. Where it
// elects, a draining replica (nil: none) is taken only when no other one
// may lead (electable).
//
//   - The leader is gone: the first replica in assignment order that is in
//     the ISR and not gone leads, and the gone nodes leave the ISR. No such
//     replica: the bucket goes offline (leader 0) and keeps its ISR, so a
//     member that comes back can lead again.
//   - The leader is not gone: the gone nodes leave the ISR, except the
//     leader, and never the last member.
//   - The bucket is offline: the first replica in assignment order that is
//     in the ISR and not gone leads, and the gone nodes leave the ISR; none,
//     nothing changes. An offline bucket with an empty ISR (its last member
//     was wiped) stays offline until an unclean election.
//
// Applied twice with the same nodes, the second run changes nothing.
func fenceBucket(b *pb.BucketRecord, gone, draining func(id uint32) bool) bool {
	leader := b.GetLeader()
	if leader == 0 || gone(leader) {
		next := electable(b, gone, draining)
		if leader == 0 && next == 0 {
			return false // still offline
		}
		b.Leader = next
		b.LeaderEpoch++
		b.BucketEpoch++
		if next != 0 {
			b.Isr = slices.DeleteFunc(slices.Clone(b.GetIsr()), gone)
		}
		return true
	}
	isr := slices.DeleteFunc(slices.Clone(b.GetIsr()), func(id uint32) bool { return id != leader && gone(id) })
	if len(isr) == len(b.GetIsr()) {
		return false
	}
	b.Isr = isr
	b.BucketEpoch++
	return true
}

// FenceChanges reports whether FenceNodes with the gone nodes would change
// b: fenceBucket's rule, without the change (which node a draining mark
// makes it elect does not matter to whether it elects one). The controller
// asks it before proposing a FenceNodes.
func FenceChanges(b *pb.BucketRecord, gone func(id uint32) bool) bool {
	leader := b.GetLeader()
	switch {
	case leader == 0:
		return electable(b, gone, nil) != 0
	case gone(leader):
		return true
	}
	return slices.ContainsFunc(b.GetIsr(), func(id uint32) bool { return id != leader && gone(id) })
}

// dropLostReplica takes a node whose data is lost (it registered again with
// a new incarnation: a wiped folder) out of one bucket, in place, and
// reports whether the bucket changed. The node leaves the ISR even as its
// last member: a replica with an empty log must never count as in sync, or
// it could be elected and its followers would truncate to its empty log. If
// it led, the first remaining ISR member in assignment order leads (one that
// is not draining, if there is one; the command knows nothing of liveness:
// the controller fences that one too if it is dead); none, the bucket goes
// offline with an empty ISR, and only an unclean election brings it back.
// The bucket epoch rises, and the leader epoch with a change of leader.
func dropLostReplica(b *pb.BucketRecord, lost uint32, draining func(id uint32) bool) bool {
	if !slices.Contains(b.GetIsr(), lost) {
		return false
	}
	b.Isr = slices.DeleteFunc(slices.Clone(b.GetIsr()), func(id uint32) bool { return id == lost })
	b.BucketEpoch++
	if b.GetLeader() == lost {
		b.Leader = electable(b, func(uint32) bool { return false }, draining)
		b.LeaderEpoch++
	}
	return true
}

// electable is the first replica in assignment order that is in the ISR, not
// gone and not draining; else the first that is in the ISR and not gone; or
// 0. draining nil: no node is.
func electable(b *pb.BucketRecord, gone, draining func(id uint32) bool) uint32 {
	return preferred(b.GetReplicas(), func(r uint32) bool { return slices.Contains(b.GetIsr(), r) && !gone(r) }, draining)
}

// preferred is the first of ids that ok takes and that is not draining,
// else the first that ok takes, or 0. A node drained before a planned stop
// (DrainNode) thus leads again only when nothing else can: an election
// never hands back what the drain moved, and never leaves a bucket offline
// for it either.
func preferred(ids []uint32, ok, draining func(id uint32) bool) uint32 {
	var fallback uint32
	for _, id := range ids {
		switch {
		case !ok(id):
		case draining == nil || !draining(id):
			return id
		case fallback == 0:
			fallback = id
		}
	}
	return fallback
}

// PreferredLeader is the replica a clean election would give b now: the
// first in assignment order that is in the ISR, live and not draining (a
// draining one only when no other qualifies), or 0.
func PreferredLeader(b *pb.BucketRecord, live, draining func(id uint32) bool) uint32 {
	return electable(b, func(id uint32) bool { return !live(id) }, draining)
}
