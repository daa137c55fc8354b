package meta

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// metaService implements pb.DRPCMetaServer on a node. Handlers for writes go
// through the leader (propose); reads run on the leader after a linearizable
// read check (leaderRead); formation calls (Hello) answer locally.
type metaService struct {
	r *Role
}

// requestID returns the caller's request id, or a fresh one when it gave
// none (then a retry after an unknown outcome is not deduplicated).
func requestID(id []byte) []byte {
	if len(id) > 0 {
		return id
	}
	return []byte(NewID())
}

func (m *metaService) Join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	var resp *pb.JoinResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		var err error
		resp, err = m.join(ctx, req)
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.Join(ctx, req)
		return err
	})
	return resp, err
}

// join runs on the leader. A node id already in the configuration with the
// same incarnation is a restart: nothing to do. With another incarnation
// (the folder was wiped) the old membership goes first, so the new
// incarnation, which remembers no votes, never counts in an election the old
// one voted in. New members join as non-voters and ask for promotion once
// caught up.
func (m *metaService) join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	n := m.r.node.Load()
	if req.NodeId == 0 || req.RaftAddress == "" || req.Incarnation == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "join needs a node id, an address and an incarnation")
	}
	servers, err := n.Servers(ctx)
	if err != nil {
		return nil, err
	}
	var cur *raftmeta.Server
	if i := slices.IndexFunc(servers, func(v raftmeta.Server) bool { return v.ID == req.NodeId }); i >= 0 {
		cur = &servers[i]
	}
	if rec, err := n.State().Node(req.NodeId); err == nil && rec.Incarnation != req.Incarnation {
		m.r.log.Warn("replacing the membership of a wiped node", "joining_node", req.NodeId,
			"old_incarnation", rec.Incarnation, "incarnation", req.Incarnation)
		// Record the new incarnation first: Raft connections name the
		// incarnation they expect, so from here on peers that have applied
		// this reach the new one, and peers that have not (a lagging
		// candidate) are refused by it and cannot collect its vote.
		updated := proto.CloneOf(rec)
		updated.Incarnation, updated.RpcAddress = req.Incarnation, req.RaftAddress
		res, err := n.Propose(ctx, &pb.Command{RequestId: []byte("rejoin/" + req.Incarnation),
			Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{Node: updated}}})
		if err != nil {
			return nil, err
		}
		if err := metastate.ResultError(res); err != nil {
			return nil, err
		}
		if cur != nil {
			if err := n.RemoveServer(ctx, req.NodeId); err != nil {
				return nil, err
			}
			cur = nil
		}
	}
	resp := &pb.JoinResponse{ClusterId: m.r.deps.ClusterID()}
	switch {
	case cur == nil:
		if err := n.AddNonvoter(ctx, req.NodeId, req.RaftAddress); err != nil {
			return nil, err
		}
	case req.Promote && !cur.Voter:
		if err := n.AddVoter(ctx, req.NodeId, cur.Address); err != nil {
			return nil, err
		}
		resp.Voter = true
	default:
		resp.Voter = cur.Voter
	}
	resp.CommitIndex = n.Status().CommitIndex
	return resp, nil
}

func (m *metaService) Propose(ctx context.Context, req *pb.ProposeRequest) (*pb.ProposeResponse, error) {
	if req.Command == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "propose without a command")
	}
	if m.r.node.Load() == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", m.r.cfg.NodeID)
	}
	res, err := m.r.proposeResult(ctx, req.Command)
	if err != nil {
		return nil, err
	}
	return &pb.ProposeResponse{Result: res}, nil
}

func (m *metaService) RaftStatus(ctx context.Context, _ *pb.RaftStatusRequest) (*pb.RaftStatusResponse, error) {
	r := m.r
	resp := &pb.RaftStatusResponse{NodeId: r.cfg.NodeID, ClusterId: r.deps.ClusterID(), State: "none"}
	n := r.node.Load()
	if n == nil {
		return resp, nil
	}
	st := n.Status()
	resp.State, resp.Term, resp.CommitIndex = st.State, st.Term, st.CommitIndex
	resp.AppliedIndex, resp.LastLogIndex = st.AppliedIndex, st.LastLogIndex
	resp.LeaderId, _ = n.Leader()
	if servers, err := n.Servers(ctx); err == nil {
		for _, v := range servers {
			resp.Servers = append(resp.Servers, &pb.VoterInfo{NodeId: v.ID, Address: v.Address, Suffrage: suffrage(v.Voter)})
		}
	}
	return resp, nil
}

func suffrage(voter bool) string {
	if voter {
		return "voter"
	}
	return "nonvoter"
}

func (m *metaService) AddVoter(ctx context.Context, req *pb.AddVoterRequest) (*pb.AdminResponse, error) {
	if req.NodeId == 0 || req.Address == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "add voter needs a node id and an address")
	}
	return m.admin(ctx, func(ctx context.Context, n *raftmeta.Node) error {
		return m.r.addVoter(ctx, n, req.NodeId, req.Address)
	}, func(ctx context.Context, c pb.DRPCMetaClient) (*pb.AdminResponse, error) { return c.AddVoter(ctx, req) })
}

func (m *metaService) RemoveVoter(ctx context.Context, req *pb.RemoveVoterRequest) (*pb.AdminResponse, error) {
	if req.NodeId == 0 {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "remove voter needs a node id")
	}
	return m.admin(ctx, func(ctx context.Context, n *raftmeta.Node) error {
		return m.r.removeVoter(ctx, n, req.NodeId, req.Force)
	}, func(ctx context.Context, c pb.DRPCMetaClient) (*pb.AdminResponse, error) {
		return c.RemoveVoter(ctx, req)
	})
}

func (m *metaService) TransferLeadership(ctx context.Context, req *pb.TransferLeadershipRequest) (*pb.AdminResponse, error) {
	return m.admin(ctx, func(ctx context.Context, n *raftmeta.Node) error {
		addr := ""
		servers, err := n.Servers(ctx)
		if err != nil {
			return err
		}
		self, _ := n.Leader()
		if !slices.ContainsFunc(servers, func(v raftmeta.Server) bool { return v.Voter && v.ID != self }) {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"node %d is the only voter: there is no other to hand leadership to", self)
		}
		if req.NodeId != 0 {
			i := slices.IndexFunc(servers, func(v raftmeta.Server) bool { return v.ID == req.NodeId && v.Voter })
			if i < 0 {
				return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node %d is not a voter", req.NodeId)
			}
			addr = servers[i].Address
		}
		return n.TransferLeadership(ctx, req.NodeId, addr)
	}, func(ctx context.Context, c pb.DRPCMetaClient) (*pb.AdminResponse, error) {
		return c.TransferLeadership(ctx, req)
	})
}

// admin runs a membership operation on the leader.
func (m *metaService) admin(ctx context.Context, local func(context.Context, *raftmeta.Node) error,
	remote func(context.Context, pb.DRPCMetaClient) (*pb.AdminResponse, error)) (*pb.AdminResponse, error) {
	var resp *pb.AdminResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		n := m.r.node.Load()
		if err := local(ctx, n); err != nil {
			return err
		}
		resp = &pb.AdminResponse{Index: n.Status().LastLogIndex}
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = remote(ctx, c)
		return err
	})
	return resp, err
}
