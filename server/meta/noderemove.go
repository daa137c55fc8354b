package meta

import (
	"context"
	"errors"
	"slices"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// RemoveNode runs an operator's removal of a node gone for good on the
// Raft leader (removeNode).
func (m *metaService) RemoveNode(ctx context.Context, req *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	if req.NodeId == 0 {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "remove node needs a node id")
	}
	id := requestID(req.RequestId)
	var resp *pb.RemoveNodeResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		var err error
		resp, err = m.r.removeNode(ctx, req.NodeId, id)
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.RemoveNode(ctx, req)
		return err
	})
	return resp, err
}

// removeNode forgets node id, which must be gone for good: everything that
// could refuse (liveness, the data only it holds, the quorum) is checked
// before anything changes, then the RemoveNode
// command deletes its registration and takes it out of its buckets (the
// state machine refuses it while the node holds the only in-sync copy of a
// bucket), then it leaves the metadata Raft group if it is a member. A
// retry with the same request id (the client's, after an unknown outcome)
// gets the command's first result and finishes the Raft step; a removal of
// a node that is only a Raft member (never registered, or registered and
// removed by a call that failed before that step) does that step alone.
func (r *Role) removeNode(ctx context.Context, id uint32, reqID []byte) (*pb.RemoveNodeResponse, error) {
	g, n := r.deps.Gossip(), r.node.Load()
	if g == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", r.cfg.NodeID)
	}
	servers, err := n.Servers(ctx)
	if err != nil {
		return nil, err
	}
	member := slices.IndexFunc(servers, func(v raftmeta.Server) bool { return v.ID == id })
	if err := r.refuseLiveRemoval(ctx, g, id, servers, member); err != nil {
		return nil, err
	}
	// The state machine refuses the same; asking first keeps a removal
	// that could only be refused out of the Raft log.
	if err := n.State().Read(func(v *metastate.View) error { return v.RemovalRefusal(id) }); err != nil {
		return nil, err
	}
	if member >= 0 && servers[member].Voter {
		// A voter that does not answer is not needed by the quorum once
		// removed, unless others are down too: say so before any change.
		if risk, _ := r.voterRemovalRisk(ctx, servers, id); risk != nil {
			return nil, risk
		}
	}
	res, err := n.Propose(ctx, &pb.Command{RequestId: reqID, Op: &pb.Command_RemoveNode{RemoveNode: &pb.RemoveNode{
		NodeId: id, LiveNodes: liveNodes(n.State().Nodes(), g),
	}}})
	if err != nil {
		return nil, err
	}
	resp := &pb.RemoveNodeResponse{}
	var refusal *metastate.Error
	switch err := metastate.ResultError(res); {
	case err == nil:
		resp.Node, resp.Index = res.GetRemoval().GetNode(), res.GetIndex()
		if resp.Buckets, err = describeRemovedReplicas(n.State(), res.GetRemoval().GetBuckets()); err != nil {
			return nil, err
		}
	case errors.As(err, &refusal) && refusal.Code == pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE && member >= 0:
		// Not registered, but a Raft member: that is what is left to remove.
	default:
		return nil, err
	}
	if member >= 0 {
		if err := n.RemoveServer(ctx, id); err != nil {
			return nil, err
		}
		resp.LeftRaft = true
	}
	r.logRemoval(id, resp)
	return resp, nil
}

// refuseLiveRemoval refuses the removal of a node that is alive: gossip
// sees it (with any incarnation: a wiped node that restarted is about to
// register), it is this node, or, a member of the Raft group (servers[member];
// member -1: it is not), it answers a probe. A live node would go on
// serving replicas the metadata no longer counts; the way to retire one is
// a drain and a stop first.
func (r *Role) refuseLiveRemoval(ctx context.Context, g *gossip.Gossip, id uint32, servers []raftmeta.Server, member int) error {
	alive := id == r.cfg.NodeID
	if m, ok := g.Member(id); ok && m.State == gossip.StateAlive {
		alive = true
	}
	if !alive && member >= 0 {
		alive = r.probe(ctx, map[uint32]string{id: servers[member].Address})[id] != "unreachable"
	}
	if alive {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"refusing to remove node %d: it is alive. Drain it (floe node drain %d), move the metadata leadership "+
				"off it if it leads, and stop it first; node remove forgets a node that is gone for good", id, id)
	}
	return nil
}

// liveNodes lists the registered nodes gossip reports alive with their
// registered incarnation, of every role.
func liveNodes(nodes []*pb.NodeRecord, g *gossip.Gossip) []uint32 {
	var live []uint32
	for _, rec := range nodes {
		if m, ok := g.Member(rec.Id); aliveAsRegistered(rec, m, ok) {
			live = append(live, rec.Id)
		}
	}
	return live
}

// describeRemovedReplicas names each bucket's table and its replication,
// as st holds them now (a table dropped since keeps none).
func describeRemovedReplicas(st *metastate.State, buckets []*pb.BucketRecord) ([]*pb.RemovedReplica, error) {
	out := make([]*pb.RemovedReplica, 0, len(buckets))
	if len(buckets) == 0 {
		return out, nil
	}
	err := st.Read(func(v *metastate.View) error {
		names, err := newBucketNames(v)
		if err != nil {
			return err
		}
		for _, b := range buckets {
			r := &pb.RemovedReplica{Bucket: b}
			t, partition, err := names.name(b.GetTableId())
			if err != nil {
				return err
			}
			if t != nil {
				r.Database, r.Table, r.Partition, r.Replication = t.Database, t.Name, partition, t.Replication
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// logRemoval logs a node's removal, and at warn level each bucket it left
// under-replicated or offline.
func (r *Role) logRemoval(id uint32, resp *pb.RemoveNodeResponse) {
	r.log.Info("node removed", "node", id, "index", resp.Index, "left_raft", resp.LeftRaft, "buckets", len(resp.Buckets))
	for _, removed := range resp.Buckets {
		b := removed.Bucket
		attrs := []any{"node", id, "table", removed.Database + "." + removed.Table, "bucket", b.Bucket, "replicas", b.Replicas,
			"replication", removed.Replication, "leader", b.Leader}
		if removed.Partition != "" {
			attrs = append(attrs, "partition", removed.Partition)
		}
		switch {
		case b.Leader == 0:
			r.log.Warn("node removal: bucket offline until an in-sync replica is back", attrs...)
		case int32(len(b.Replicas)) < removed.Replication:
			r.log.Warn("node removal: bucket under-replicated", attrs...)
		}
	}
}
