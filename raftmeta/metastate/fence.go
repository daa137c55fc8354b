package metastate

import (
	"slices"

	"google.golang.org/protobuf/proto"

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
	changed, err := a.fenceBuckets(func(id uint32) bool { return gone[id] }, true)
	if err != nil {
		return nil, err
	}
	return &pb.CommandResult{Unchanged: changed == 0}, nil
}

// fenceBuckets runs fenceBucket on every bucket of every table, in key
// order, stores the buckets that changed and returns how many did.
func (a *applier) fenceBuckets(gone func(id uint32) bool, elect bool) (int, error) {
	var changed []*pb.BucketRecord
	err := a.tx.Bucket(bucketBuckets).ForEach(func(k, v []byte) error {
		b := &pb.BucketRecord{}
		if err := proto.Unmarshal(v, b); err != nil {
			return corruptRecord(k, err)
		}
		if fenceBucket(b, gone, elect) {
			changed = append(changed, b)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// bbolt forbids writes while ForEach iterates the same bucket.
	for _, b := range changed {
		if err := a.putBucket(b); err != nil {
			return 0, err
		}
	}
	return len(changed), nil
}

// fenceBucket takes the nodes gone reports out of one bucket, in place, and
// reports whether the bucket changed. It never elects a replica outside the
// ISR, and every change raises the bucket epoch; a new leader (or none)
// raises the leader epoch too.
//
//   - The leader is gone: the first replica in assignment order that is in
//     the ISR and not gone leads, and the gone nodes leave the ISR. No such
//     replica: the bucket goes offline (leader 0) and keeps its ISR, so a
//     member that comes back can lead again.
//   - The leader is not gone: the gone nodes leave the ISR, except the
//     leader, and never the last member.
//   - The bucket is offline: with elect, the first replica in assignment
//     order that is in the ISR and not gone leads, and the gone nodes leave
//     the ISR; none, nothing changes. Without elect (a node re-registering
//     knows nothing of the others' liveness) the gone nodes leave the ISR,
//     never the last member.
//
// Applied twice with the same nodes, the second run changes nothing.
func fenceBucket(b *pb.BucketRecord, gone func(id uint32) bool, elect bool) bool {
	leader := b.GetLeader()
	if (leader != 0 && gone(leader)) || (leader == 0 && elect) {
		next := electable(b, gone)
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
	if len(isr) == len(b.GetIsr()) || len(isr) == 0 {
		return false
	}
	b.Isr = isr
	b.BucketEpoch++
	return true
}

// electable is the first replica in assignment order that is in the ISR and
// not gone, or 0.
func electable(b *pb.BucketRecord, gone func(id uint32) bool) uint32 {
	for _, r := range b.GetReplicas() {
		if slices.Contains(b.GetIsr(), r) && !gone(r) {
			return r
		}
	}
	return 0
}
