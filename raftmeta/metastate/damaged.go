package metastate

import (
	"github.com/floedb/floe/transport/pb"
)

// reportDamagedReplica takes a replica whose log is damaged out of its
// bucket's ISR and leadership, as for a replica whose data is lost
// (dropLostReplica): it can no longer vouch for what it holds from the
// damaged offset on, and once out of the ISR it cuts its log back there and
// fetches the rest again. A report from an earlier run of the node (another
// node epoch) is FENCED; a replica already out of the ISR changes nothing.
//
// Nor does a damaged batch on the ISR's only member (the last copy, rule
// "damage and the last copy" 1): with min.insync.replicas 1 the writes
// after the damage were acknowledged by it alone, and taking it out would
// send it to cut them away. It keeps leading, answering CORRUPT for the
// damaged batch only. The ISR is checked here, in log order, because the
// replica's view when it reported may be older: an ISR that shrank to the
// reporter meanwhile makes it the last copy. A lost tail (LostTail) has
// nothing after the loss to keep, and leaves as before.
//
// The result carries the bucket.
func (a *applier) reportDamagedReplica(c *pb.ReportDamagedReplica) (*pb.CommandResult, error) {
	n := &pb.NodeRecord{}
	ok, err := getRecord(a.tx.Bucket(bucketNodes), nodeKey(c.GetNodeId()), n)
	if err != nil {
		return nil, err
	}
	switch {
	case !ok:
		return nil, errorf(codeInvalidRequest, "damaged replica: node %d is not registered", c.GetNodeId())
	case n.GetNodeEpoch() != c.GetNodeEpoch():
		return nil, errorf(codeFenced, "damaged replica: node %d reports at node epoch %d, registered at %d",
			c.GetNodeId(), c.GetNodeEpoch(), n.GetNodeEpoch())
	}
	b := &pb.BucketRecord{}
	ok, err = getRecord(a.tx.Bucket(bucketBuckets), bucketKey(c.GetTableId(), c.GetBucket()), b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(codeUnknownTable, "table %d has no bucket %d", c.GetTableId(), c.GetBucket())
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	if lastCopy := !c.GetLostTail() && len(b.GetIsr()) == 1 && b.GetIsr()[0] == c.GetNodeId(); lastCopy ||
		!dropLostReplica(b, c.GetNodeId(), draining) {
		return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}, Unchanged: true}, nil
	}
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}}, nil
}
