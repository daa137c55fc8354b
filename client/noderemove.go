package client

import (
	"context"

	"github.com/floedb/floe/transport/pb"
)

// RemoveResult is what RemoveNode did.
type RemoveResult struct {
	// Node is the registration removed; nil when the node was only a
	// member of the metadata Raft group.
	Node *Node `json:"node,omitempty"`
	// LeftRaft: the node was a member (voter or non-voter) of the metadata
	// Raft group and no longer is.
	LeftRaft bool `json:"left_raft"`
	// Buckets lists every bucket the node was a replica of.
	Buckets []RemovedReplica `json:"buckets"`
}

// RemovedReplica is one bucket a removed node was a replica of.
type RemovedReplica struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	// Replication is the table's replication factor.
	Replication int32 `json:"replication"`
	// Bucket is the bucket after the removal.
	Bucket Bucket `json:"bucket"`
	// UnderReplicated: the bucket has fewer replicas than Replication.
	// Nothing places new replicas yet: it stays so.
	UnderReplicated bool `json:"under_replicated"`
}

// UnderReplicated counts the buckets left with fewer replicas than their
// table's replication factor.
func (r *RemoveResult) UnderReplicated() int {
	n := 0
	for _, b := range r.Buckets {
		if b.UnderReplicated {
			n++
		}
	}
	return n
}

// RemoveNode forgets node id for good: its registration, its membership of
// the metadata Raft group, and its place in the replica list and ISR of
// every bucket (a bucket it led gets another live in-sync replica as
// leader, or goes offline until one is back). The node must be gone:
// INVALID_REQUEST while it is alive (drain and stop it first).
// NOT_ENOUGH_REPLICAS, naming the buckets, while it holds the only in-sync
// copy of one (their data would be lost); QUORUM_AT_RISK when removing a
// voter would leave fewer answering voters than a quorum; UNKNOWN_NODE when
// it is neither registered nor a member. Nothing changes on a refusal. The
// call retries with one request id, so an outcome it did not hear is not
// applied twice. A node with the same id may register again later: it
// starts as a new node without replicas.
func (a *Admin) RemoveNode(ctx context.Context, id uint32) (*RemoveResult, error) {
	req := &pb.RemoveNodeRequest{RequestId: newRequestID(), NodeId: id}
	var resp *pb.RemoveNodeResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.RemoveNode(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &RemoveResult{LeftRaft: resp.LeftRaft, Buckets: []RemovedReplica{}}
	if resp.Node != nil {
		n := nodeFromPB(resp.Node, false)
		out.Node = &n
	}
	for _, r := range resp.Buckets {
		out.Buckets = append(out.Buckets, RemovedReplica{Database: r.Database, Table: r.Table, Replication: r.Replication,
			Bucket: bucketFromPB(r.Bucket), UnderReplicated: int32(len(r.Bucket.GetReplicas())) < r.Replication})
	}
	return out, nil
}
