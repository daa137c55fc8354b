package metastate

import (
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/floedb/floe/transport/pb"
)

// maxNamedBuckets bounds how many buckets a refused removal names.
const maxNamedBuckets = 20

// removeNode is an operator's removal of a node gone for good: its
// registration is deleted and it leaves every bucket it was a replica of
// (removeReplica). It is refused while the node is alive (live nodes), and
// while it holds the only in-sync copy of a bucket or is a bucket's last
// replica: those buckets' data would be lost with it, and the refusal names
// them. A bucket left with fewer replicas than its table's replication is
// under-replicated until the controller's next round re-places replicas
// (PlanMoves' repair, started as moves).
func (a *applier) removeNode(c *pb.RemoveNode) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "remove node: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	id := c.GetNodeId()
	if id == 0 {
		return nil, errorf(codeInvalidRequest, "remove node: node id 0 is reserved")
	}
	if slices.Contains(c.GetLiveNodes(), id) {
		return nil, errorf(codeInvalidRequest, "remove node: node %d is alive: drain it (floe node drain %d) and stop it first; "+
			"remove forgets a node that is gone for good", id, id)
	}
	n := &pb.NodeRecord{}
	registered, err := getRecord(a.tx.Bucket(bucketNodes), nodeKey(id), n)
	if err != nil {
		return nil, err
	}
	x, err := a.bucketIndex()
	if err != nil {
		return nil, err
	}
	refs := x.bucketsOf([]uint32{id}, false)
	if !registered && len(refs) == 0 {
		return nil, errorf(codeUnknownNode, "remove node: node %d is not registered and holds no replica", id)
	}
	buckets := make([]*pb.BucketRecord, 0, len(refs))
	for _, ref := range refs {
		b, err := getIndexed(a.tx.Bucket(bucketBuckets), ref)
		if err != nil {
			return nil, err
		}
		buckets = append(buckets, b)
	}
	if err := refuseDataLoss(a.tx, id, buckets); err != nil {
		return nil, err
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	result := &pb.RemoveNodeResult{}
	live := func(r uint32) bool { return slices.Contains(c.GetLiveNodes(), r) }
	if _, err := a.changeBucketsOf(refs, func(b *pb.BucketRecord) bool {
		changed := removeReplica(b, id, live, draining)
		result.Buckets = append(result.Buckets, b)
		return changed
	}); err != nil {
		return nil, err
	}
	if registered {
		result.Node = n
		if err := a.deleteNode(id); err != nil {
			return nil, err
		}
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Removal{Removal: result}}, nil
}

// refuseDataLoss refuses the removal of node id when one of its buckets
// would lose data with it: the node is its only in-sync replica (removing
// it would leave an ISR of nobody, so no clean election could ever bring
// the bucket back), or its last replica. The refusal names every such
// bucket (up to maxNamedBuckets) by table.
func refuseDataLoss(tx *bolt.Tx, id uint32, buckets []*pb.BucketRecord) error {
	var lost []*pb.BucketRecord
	for _, b := range buckets {
		if holdsOnlyCopy(b, id) {
			lost = append(lost, b)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	tables, err := tablesByID(tx)
	if err != nil {
		return err
	}
	var parts []string
	for _, b := range lost[:min(len(lost), maxNamedBuckets)] {
		name := fmt.Sprintf("table id %d", b.GetTableId())
		if t := tables[b.GetTableId()]; t != nil {
			name = t.GetDatabase() + "." + t.GetName()
		}
		parts = append(parts, fmt.Sprintf("%s bucket %d", name, b.GetBucket()))
	}
	if more := len(lost) - len(parts); more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return errorf(codeNotEnoughReplicas, "remove node: node %d holds the only in-sync copy of %s (%s): removing it would lose "+
		"their data. Bring the node back so other replicas catch up, or drop those tables first",
		id, plural(len(lost), "bucket"), strings.Join(parts, ", "))
}

// holdsOnlyCopy reports whether node id is b's only in-sync replica, or its
// only replica at all.
func holdsOnlyCopy(b *pb.BucketRecord, id uint32) bool {
	isr, replicas := b.GetIsr(), b.GetReplicas()
	return (len(isr) == 1 && isr[0] == id) || (len(replicas) == 1 && replicas[0] == id)
}

// removeReplica takes a removed node out of one bucket's replicas and ISR,
// in place (and out of a move in progress), and reports whether the
// bucket changed; the bucket and leader epochs rise with any change (a
// replica leaving always raises the leader epoch: see endMove). If the
// node led, the first other in-sync replica in assignment order that is
// live leads (one that is not draining, if there is one); with none live
// the bucket goes offline
// (leader 0) and keeps its ISR, so the controller's fencing elects a member
// once one is back, as it does for a leader that died (fenceBucket).
func removeReplica(b *pb.BucketRecord, id uint32, live, draining func(id uint32) bool) bool {
	if !slices.Contains(b.GetReplicas(), id) {
		return false
	}
	removed := func(r uint32) bool { return r == id }
	b.Replicas = slices.DeleteFunc(slices.Clone(b.GetReplicas()), removed)
	b.Isr = slices.DeleteFunc(slices.Clone(b.GetIsr()), removed)
	if m := b.GetMove(); m != nil {
		// A move in progress goes on without the node; one whose whole
		// target it was has nowhere left to go.
		m.Original = slices.DeleteFunc(m.Original, removed)
		m.Target = slices.DeleteFunc(m.Target, removed)
		if len(m.Target) == 0 {
			b.Move = nil
		}
	}
	b.BucketEpoch++
	if b.GetLeader() == id {
		b.Leader = electable(b, func(r uint32) bool { return !live(r) }, draining)
	}
	// A replica left: the leader epoch rises even when the leader stays
	// (as endMove's), so nothing the removed node sent in the old epoch
	// counts.
	b.LeaderEpoch++
	return true
}

// deleteNode deletes a node's registration and lists it as dropped.
func (a *applier) deleteNode(id uint32) error {
	if err := a.tx.Bucket(bucketNodes).Delete(nodeKey(id)); err != nil {
		return err
	}
	a.changes.droppedNodes = append(a.changes.droppedNodes, id)
	return nil
}

// tablesByID maps the id of every table and partition, the ids buckets
// are keyed by, to the record of its table.
func tablesByID(tx *bolt.Tx) (map[uint64]*pb.TableRecord, error) {
	dbs, err := listDatabases(tx)
	if err != nil {
		return nil, err
	}
	out := map[uint64]*pb.TableRecord{}
	for _, db := range dbs {
		tables, err := listTables(tx, db.GetId())
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			out[t.GetId()] = t
			if len(t.GetPartitionKeys()) == 0 {
				continue
			}
			parts, err := listPartitions(tx, t.GetId())
			if err != nil {
				return nil, err
			}
			for _, p := range parts {
				out[p.GetId()] = t
			}
		}
	}
	return out, nil
}
