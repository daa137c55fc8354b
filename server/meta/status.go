package meta

import (
	"context"
	"sync"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// statusProbeTimeout bounds how long cluster status waits for each node.
const statusProbeTimeout = 500 * time.Millisecond

// ClusterStatus is answered by the leader: the voters with the state each
// reports of itself, and every registered node with whether it answered a
// probe just now.
func (m *metaService) ClusterStatus(ctx context.Context, req *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	var resp *pb.ClusterStatusResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		var err error
		resp, err = m.r.clusterStatus(ctx)
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ClusterStatus(ctx, req)
		return err
	})
	return resp, err
}

func (r *Role) clusterStatus(ctx context.Context) (*pb.ClusterStatusResponse, error) {
	n := r.node.Load()
	if err := n.LinearizableRead(ctx); err != nil {
		return nil, err
	}
	st := n.Status()
	servers, err := n.Servers(ctx)
	if err != nil {
		return nil, err
	}
	leader, _ := n.Leader()
	resp := &pb.ClusterStatusResponse{ClusterId: r.deps.ClusterID(), LeaderId: leader, Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex}
	nodes := n.State().Nodes()

	// Voters report their own Raft state; liveness of the other nodes comes
	// from gossip, or from a probe while this node does not gossip yet.
	g := r.deps.Gossip()
	addrs := map[uint32]string{}
	for _, v := range servers {
		addrs[v.ID] = v.Address
	}
	if g == nil {
		for _, rec := range nodes {
			addrs[rec.Id] = rec.RpcAddress
		}
	}
	states := r.probe(ctx, addrs)
	for _, v := range servers {
		state := states[v.ID]
		if v.ID == r.cfg.NodeID {
			state = st.State
		}
		resp.Voters = append(resp.Voters, &pb.VoterInfo{NodeId: v.ID, Address: v.Address, Suffrage: suffrage(v.Voter), State: state})
	}
	for _, rec := range nodes {
		var alive bool
		switch {
		case rec.Id == r.cfg.NodeID:
			alive = true
		case g != nil:
			m, ok := g.Member(rec.Id)
			alive = ok && m.State == gossip.StateAlive && m.Incarnation == rec.Incarnation
		default:
			alive = states[rec.Id] != "unreachable"
		}
		resp.Nodes = append(resp.Nodes, &pb.NodeStatus{Node: rec, Alive: alive})
	}
	// Moves and settings as this node's state holds them (a follower's
	// may trail the leader's by what it has not applied yet).
	err = n.State().Read(func(v *metastate.View) error {
		moves, err := readMoveStatus(v)
		if err != nil {
			return err
		}
		resp.Moves, resp.QueuedMoves = moves.Running, int32(len(moves.Queued))
		resp.Settings, err = v.ClusterSettings()
		return err
	})
	return resp, err
}

// probe asks each node for its Raft state, "unreachable" when it does not
// answer in time.
func (r *Role) probe(ctx context.Context, addrs map[uint32]string) map[uint32]string {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[uint32]string, len(addrs))
	for id, addr := range addrs {
		if id == r.cfg.NodeID {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, statusProbeTimeout)
			defer cancel()
			state := "unreachable"
			if r, err := pb.NewDRPCMetaClient(r.pool.Conn(addr)).RaftStatus(pctx, &pb.RaftStatusRequest{}); err == nil && r.NodeId == id {
				state = r.State
			}
			mu.Lock()
			out[id] = state
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
