package metastate

import (
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Node roles.
const (
	// RoleMeta: a voter of the metadata Raft group.
	RoleMeta = "meta"
	// RoleTablet: hosts bucket replicas.
	RoleTablet = "tablet"
)

// Bounds of a node record's strings.
const (
	maxAddressBytes     = 1024
	maxRackBytes        = 256
	maxIncarnationBytes = 256
)

// registerNode stores or replaces a node; the Raft index becomes its epoch.
//
// A node that registers again with another incarnation had its data folder
// wiped: the replicas it held are lost, and dropLostReplica takes it out of
// every ISR, even as the last member (that bucket goes offline until an
// unclean election). A node that registers again with its incarnation
// restarted: releadBucket gives every bucket it leads a new leader epoch.
func (a *applier) registerNode(c *pb.RegisterNode) (*pb.CommandResult, error) {
	n := c.GetNode()
	if err := validateNode(n); err != nil {
		return nil, err
	}
	old := &pb.NodeRecord{}
	known, err := getRecord(a.tx.Bucket(bucketNodes), nodeKey(n.GetId()), old)
	if err != nil {
		return nil, err
	}
	rec := proto.Clone(n).(*pb.NodeRecord)
	rec.NodeEpoch = a.index
	rec.RegisteredAtMs = a.appendedAtMs
	// A registration is a new run of the node: a drain's mark was for the
	// stop it came back from, unless the node is being decommissioned:
	// that holds until it has no replica left and is removed, or until
	// the operator cancels it.
	rec.Decommissioning = known && old.GetDecommissioning()
	rec.Draining = rec.Decommissioning
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	if err := a.putNode(rec); err != nil {
		return nil, err
	}
	id := rec.GetId()
	change := func(b *pb.BucketRecord) bool { return releadBucket(b, id) }
	if known && old.GetIncarnation() != rec.GetIncarnation() {
		change = func(b *pb.BucketRecord) bool { return dropLostReplica(b, id, draining) }
	}
	x, err := a.bucketIndex()
	if err != nil {
		return nil, err
	}
	// Both changes concern buckets of which the node is a replica.
	if _, err := a.changeBucketsOf(x.bucketsOf([]uint32{id}, false), change); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Node{Node: rec}}, nil
}

// releadBucket raises the leader and bucket epochs of a bucket the node
// leads, in place, and reports whether it did. A node that registers again
// restarted: it may have lost an unsynced tail that its followers, which
// fetch before the leader's fsync, already copied. Leading on in the old
// epoch it would write other bytes at those offsets under the epoch the
// followers hold them in, and no truncation would ever see the difference;
// in a new epoch the followers truncate to where the logs agree.
func releadBucket(b *pb.BucketRecord, leader uint32) bool {
	if b.GetLeader() != leader {
		return false
	}
	b.LeaderEpoch++
	b.BucketEpoch++
	return true
}

func validateNode(n *pb.NodeRecord) error {
	switch {
	case n == nil:
		return errorf(codeInvalidRequest, "register node: no node")
	case n.GetId() == 0:
		return errorf(codeInvalidRequest, "register node: node id 0 is reserved")
	case len(n.GetRoles()) == 0:
		return errorf(codeInvalidRequest, "node %d has no roles", n.GetId())
	case n.GetRpcAddress() == "":
		return errorf(codeInvalidRequest, "node %d has no rpc address", n.GetId())
	case len(n.GetRpcAddress()) > maxAddressBytes || len(n.GetGossipAddress()) > maxAddressBytes:
		return errorf(codeInvalidRequest, "node %d: address longer than %d bytes", n.GetId(), maxAddressBytes)
	case len(n.GetRack()) > maxRackBytes:
		return errorf(codeInvalidRequest, "node %d: rack longer than %d bytes", n.GetId(), maxRackBytes)
	case len(n.GetIncarnation()) > maxIncarnationBytes:
		return errorf(codeInvalidRequest, "node %d: incarnation longer than %d bytes", n.GetId(), maxIncarnationBytes)
	}
	for i, r := range n.GetRoles() {
		if r != RoleMeta && r != RoleTablet {
			return errorf(codeInvalidRequest, "node %d: unknown role %.64q (want %q or %q)", n.GetId(), r, RoleMeta, RoleTablet)
		}
		if slices.Contains(n.GetRoles()[:i], r) {
			return errorf(codeInvalidRequest, "node %d: role %q listed twice", n.GetId(), r)
		}
	}
	return nil
}

// drainingNodes returns whether a node is marked draining (DrainNode), as
// of the state before the command; nil when none is.
func (a *applier) drainingNodes() (func(id uint32) bool, error) {
	nodes, err := listNodes(a.tx)
	if err != nil {
		return nil, err
	}
	var ids []uint32
	for _, n := range nodes {
		if n.GetDraining() {
			ids = append(ids, n.GetId())
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return func(id uint32) bool { return slices.Contains(ids, id) }, nil
}

// hasRole reports whether a node has a role.
func hasRole(n *pb.NodeRecord, role string) bool { return slices.Contains(n.GetRoles(), role) }

// listNodes returns every node, sorted by id.
func listNodes(tx *bolt.Tx) ([]*pb.NodeRecord, error) {
	var out []*pb.NodeRecord
	err := tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
		n := &pb.NodeRecord{}
		if err := proto.Unmarshal(v, n); err != nil {
			return corruptRecord(k, err)
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// tabletNodes returns the nodes with the tablet role, sorted by id.
func tabletNodes(tx *bolt.Tx) ([]*pb.NodeRecord, error) {
	nodes, err := listNodes(tx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(nodes, func(n *pb.NodeRecord) bool { return !hasRole(n, RoleTablet) }), nil
}
