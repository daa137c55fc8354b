package client

import (
	"context"

	"github.com/floedb/floe/transport/pb"
)

// Voter is a member of the metadata Raft group.
type Voter struct {
	ID       uint32 `json:"id"`
	Address  string `json:"address"`
	Suffrage string `json:"suffrage"`
	// State is what the member reports of itself: leader, follower,
	// candidate, or unreachable.
	State string `json:"state"`
}

// Node is a registered node.
type Node struct {
	ID        uint32   `json:"id"`
	Roles     []string `json:"roles"`
	Address   string   `json:"address"`
	Gossip    string   `json:"gossip_address,omitempty"`
	Rack      string   `json:"rack,omitempty"`
	NodeEpoch uint64   `json:"node_epoch"`
	Alive     bool     `json:"alive"`
	// Draining: DrainNode moved its leaderships off, and elections pass it
	// over until it registers again (restarts) or UndrainNode.
	Draining bool `json:"draining"`
	// Decommissioning: DecommissionNode moves every replica off it; it
	// takes no new ones.
	Decommissioning bool `json:"decommissioning"`
}

// ClusterStatus is the cluster as its metadata leader sees it.
type ClusterStatus struct {
	ClusterID string `json:"cluster_id"`
	// Leader is the leader's node id, 0 when none is known.
	Leader       uint32  `json:"-"`
	Term         uint64  `json:"term"`
	CommitIndex  uint64  `json:"commit_index"`
	AppliedIndex uint64  `json:"applied_index"`
	Voters       []Voter `json:"voters"`
	Nodes        []Node  `json:"nodes"`
	// Moves running, and how many wait for a turn.
	Moves       []MoveProgress  `json:"moves"`
	QueuedMoves int32           `json:"queued_moves"`
	Settings    ClusterSettings `json:"settings"`
}

// ClusterStatus reports the metadata group and the registered nodes.
func (a *Admin) ClusterStatus(ctx context.Context) (*ClusterStatus, error) {
	var resp *pb.ClusterStatusResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ClusterStatus(ctx, &pb.ClusterStatusRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &ClusterStatus{ClusterID: resp.ClusterId, Leader: resp.LeaderId, Term: resp.Term,
		CommitIndex: resp.CommitIndex, AppliedIndex: resp.AppliedIndex, Voters: []Voter{}, Nodes: []Node{}}
	for _, v := range resp.Voters {
		out.Voters = append(out.Voters, Voter{ID: v.NodeId, Address: v.Address, Suffrage: v.Suffrage, State: v.State})
	}
	for _, n := range resp.Nodes {
		out.Nodes = append(out.Nodes, nodeFromPB(n.Node, n.Alive))
	}
	out.Moves, out.QueuedMoves, out.Settings = progressFromPB(resp.Moves), resp.QueuedMoves, *settingsFromPB(resp.Settings)
	return out, nil
}

// nodeFromPB is a node record with whether it is alive.
func nodeFromPB(r *pb.NodeRecord, alive bool) Node {
	return Node{ID: r.GetId(), Roles: r.GetRoles(), Address: r.GetRpcAddress(), Gossip: r.GetGossipAddress(),
		Rack: r.GetRack(), NodeEpoch: r.GetNodeEpoch(), Alive: alive, Draining: r.GetDraining(),
		Decommissioning: r.GetDecommissioning()}
}

// BucketStatus is one bucket of a table as the metadata leader sees it,
// with the high watermark its leader reports.
type BucketStatus struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	// Partition is the bucket's partition in a partitioned table.
	Partition   string   `json:"partition,omitempty"`
	Bucket      int32    `json:"bucket"`
	Leader      uint32   `json:"leader"` // 0: offline
	LeaderEpoch int32    `json:"leader_epoch"`
	BucketEpoch int32    `json:"bucket_epoch"`
	ISR         []uint32 `json:"isr"`
	Replicas    []uint32 `json:"replicas"`
	// HighWatermark is the leader's high watermark (the first offset not
	// yet committed); nil when the bucket is offline or its leader did not
	// answer, and then Error says why.
	HighWatermark *int64 `json:"high_watermark"`
	Error         string `json:"error,omitempty"`
	// Replication is the table's replication factor.
	Replication int32 `json:"replication"`
	// UnderReplicated: the ISR has fewer members than the replicas, or
	// than Replication (a removed node left the replica list, until the
	// controller places a new one).
	UnderReplicated bool `json:"under_replicated"`
	// Offline: no leader (no in-sync replica is alive, or none is left).
	Offline bool `json:"offline"`
}

// BucketStatus reports every bucket of every table (by database, table and
// number): placement, leader, epochs and ISR from the metadata leader, and
// the high watermark from each bucket's leader, which the metadata leader
// asks (a bounded number at a time, within a few seconds). A leader that
// does not answer does not fail the call: its buckets come without a high
// watermark and with an Error.
func (a *Admin) BucketStatus(ctx context.Context) ([]BucketStatus, error) {
	var resp *pb.BucketStatusResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.BucketStatus(ctx, &pb.BucketStatusRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BucketStatus, 0, len(resp.Buckets))
	for _, st := range resp.Buckets {
		b := st.Bucket
		bs := BucketStatus{Database: st.Database, Table: st.Table, Partition: st.GetPartition(), Bucket: b.GetBucket(), Leader: b.GetLeader(),
			LeaderEpoch: b.GetLeaderEpoch(), BucketEpoch: b.GetBucketEpoch(), ISR: nonNil(b.GetIsr()),
			Replicas: nonNil(b.GetReplicas()), HighWatermark: st.HighWatermark, Error: st.Error,
			Replication: st.Replication, Offline: b.GetLeader() == 0,
			UnderReplicated: len(b.GetIsr()) < max(len(b.GetReplicas()), int(st.Replication))}
		out = append(out, bs)
	}
	return out, nil
}

// RaftStatus is one node's own view of the metadata group.
type RaftStatus struct {
	NodeID       uint32 `json:"node_id"`
	State        string `json:"state"`
	Term         uint64 `json:"term"`
	Leader       uint32 `json:"leader"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	LastLogIndex uint64 `json:"last_log_index"`
	ClusterID    string `json:"cluster_id"`
}

// NodeRaftStatus asks the node at addr (not the leader) for its own view.
func (a *Admin) NodeRaftStatus(ctx context.Context, addr string) (*RaftStatus, error) {
	r, err := pb.NewDRPCMetaClient(a.c.pool.Conn(addr)).RaftStatus(ctx, &pb.RaftStatusRequest{})
	if err != nil {
		return nil, err
	}
	return &RaftStatus{NodeID: r.NodeId, State: r.State, Term: r.Term, Leader: r.LeaderId, CommitIndex: r.CommitIndex,
		AppliedIndex: r.AppliedIndex, LastLogIndex: r.LastLogIndex, ClusterID: r.ClusterId}, nil
}

// AddVoter adds a node to the metadata Raft group. The server first checks
// that address answers as meta node id of this cluster (INVALID_REQUEST or
// CLUSTER_MISMATCH otherwise, nothing changed), adds it as a non-voter and
// promotes it once it has caught up; one that has not within a few seconds
// stays a non-voter (QUORUM_AT_RISK), and calling AddVoter again resumes.
func (a *Admin) AddVoter(ctx context.Context, id uint32, address string) error {
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.AddVoter(ctx, &pb.AddVoterRequest{NodeId: id, Address: address})
		return err
	})
}

// RemoveVoter removes a node from the metadata Raft group. The last voter
// is never removed; a removal that leaves fewer answering voters than a
// quorum is refused (QUORUM_AT_RISK) unless force is set.
func (a *Admin) RemoveVoter(ctx context.Context, id uint32, force bool) error {
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.RemoveVoter(ctx, &pb.RemoveVoterRequest{NodeId: id, Force: force})
		return err
	})
}

// TransferLeadership moves Raft leadership to the voter id (0: any other).
func (a *Admin) TransferLeadership(ctx context.Context, id uint32) error {
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		_, err := m.TransferLeadership(ctx, &pb.TransferLeadershipRequest{NodeId: id})
		return err
	})
}
