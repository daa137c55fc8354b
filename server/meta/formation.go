package meta

import (
	"context"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// FormRetry paces discovery while a cluster forms.
const FormRetry = 200 * time.Millisecond

// form brings Raft up. With Raft state from an earlier run the node simply
// restarts. Without it, the node asks its --join peers (Hello) and then:
//
//   - a formed cluster that has registered this node id with another
//     incarnation means the folder was wiped: the node asks the leader to
//     replace its old membership (remove, re-add as non-voter) before it runs
//     Raft, so the new incarnation can never vote in a term the old one
//     voted in; it is promoted once caught up;
//   - a formed cluster that does not know the node: start Raft, then join
//     (non-voter first, promoted once caught up) — or, for a founding member
//     named in the bootstrap configuration, just start;
//   - no formed cluster and --bootstrap-expect N: once N meta nodes know of
//     each other, the one with the lowest id creates the cluster id and
//     bootstraps the N of them as voters; the others learn the id from it.
func (r *Role) form(ctx context.Context) error {
	raftDir := r.raftDir()
	hasState, err := raftmeta.HasState(raftDir)
	if err != nil {
		return err
	}
	if hasState {
		if r.deps.ClusterID() == "" {
			return errNoRaftState(raftDir)
		}
		_, err := r.openRaft()
		return err
	}
	if r.cfg.BootstrapExpect == 0 && len(r.cfg.Join) == 0 {
		return pkgerr.Errorf("server", "nothing to do: give --bootstrap-expect to form a cluster or --join to join one")
	}
	lastLog := time.Time{}
	// Discovery polls at a steady pace (peers may start at any moment);
	// the jitter keeps nodes started together from greeting in step.
	pace := backoff.Backoff{Min: FormRetry, Max: FormRetry, Jitter: true}
	for {
		responses := r.deps.Peers.HelloAll(ctx)
		if done, err := r.tryJoinFormed(ctx, responses); done || err != nil {
			return err
		}
		if done, err := r.tryBootstrap(ctx, responses); done || err != nil {
			return err
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			r.log.Info("waiting for peers to form a cluster", "known_meta_nodes", len(r.deps.Peers.MetaPeers()),
				"bootstrap_expect", r.cfg.BootstrapExpect, "join", r.cfg.Join)
		}
		if !pace.Wait(ctx) {
			return ctx.Err()
		}
	}
}

func (r *Role) raftDir() string { return Dir(r.cfg.DataDir) }

// Dir is where a node keeps its Raft state and metadata state file.
func Dir(dataDir string) string { return dataDir + "/meta" }

// tryJoinFormed joins a cluster a peer says is formed.
func (r *Role) tryJoinFormed(ctx context.Context, responses []*pb.HelloResponse) (bool, error) {
	var formed *pb.HelloResponse
	for _, r := range responses {
		if r.Formed && r.ClusterId != "" {
			formed = r
			break
		}
	}
	if formed == nil {
		return false, nil
	}
	if err := r.deps.AdoptClusterID(formed.ClusterId); err != nil {
		return false, err
	}
	wiped := formed.YourIncarnation != "" && formed.YourIncarnation != r.cfg.Incarnation
	if wiped {
		r.log.Warn("this node's folder is new but the cluster knows the node: rejoining as a new incarnation",
			"old_incarnation", formed.YourIncarnation, "incarnation", r.cfg.Incarnation)
		resp, err := r.joinUntilDone(ctx, false)
		if err != nil {
			return false, err
		}
		if _, err := r.openRaft(); err != nil {
			return false, err
		}
		r.deps.Go(func() { r.promoteWhenCaughtUp(ctx, resp.CommitIndex) })
		return true, nil
	}
	if _, err := r.openRaft(); err != nil {
		return false, err
	}
	r.deps.Go(func() {
		resp, err := r.joinUntilDone(ctx, false)
		if err == nil && !resp.Voter {
			r.promoteWhenCaughtUp(ctx, resp.CommitIndex)
		}
	})
	return true, nil
}

// tryBootstrap forms a new cluster when enough meta nodes know each other.
func (r *Role) tryBootstrap(ctx context.Context, responses []*pb.HelloResponse) (bool, error) {
	if r.cfg.BootstrapExpect == 0 {
		return false, nil
	}
	peers := r.deps.Peers.MetaPeers()
	if len(peers) < r.cfg.BootstrapExpect {
		return false, nil
	}
	founders := peers[:r.cfg.BootstrapExpect]
	if founders[0].NodeId != r.cfg.NodeID {
		// Not the seed: wait for the seed to report the cluster it formed;
		// tryJoinFormed then starts Raft (the seed's configuration names us).
		return false, nil
	}
	id := r.deps.ClusterID()
	if id == "" {
		id = NewID()
		if err := r.deps.AdoptClusterID(id); err != nil {
			return false, err
		}
	}
	n, err := r.openRaft()
	if err != nil {
		return false, err
	}
	var servers []raftmeta.Server
	for _, p := range founders {
		servers = append(servers, raftmeta.Server{ID: p.NodeId, Address: p.RpcAddress, Voter: true})
	}
	if err := n.Bootstrap(servers); err != nil {
		return false, pkgerr.Errorf("server", "bootstrap: %w", err)
	}
	r.log.Info("bootstrapped a new cluster", "cluster_id", id, "voters", len(servers))
	return true, nil
}

// joinUntilDone asks the leader (through any meta node) to make this node a
// member, until it says yes or ctx ends.
func (r *Role) joinUntilDone(ctx context.Context, promote bool) (*pb.JoinResponse, error) {
	req := &pb.JoinRequest{NodeId: r.cfg.NodeID, RaftAddress: r.cfg.Advertise, Incarnation: r.cfg.Incarnation, Promote: promote}
	pace := backoff.Backoff{Min: FormRetry, Max: 2 * time.Second, Jitter: true}
	for {
		resp, err := r.join(ctx, req)
		if err == nil {
			r.log.Info("joined the metadata group", "voter", resp.Voter)
			return resp, nil
		}
		r.log.Debug("join attempt failed", "err", err)
		if !pace.Wait(ctx) {
			return nil, ctx.Err()
		}
	}
}

// join sends one join request: through this node's own Raft view when it
// knows a leader, otherwise to each known meta node in turn (which forwards
// it to the leader). A node that runs Raft but is not a member yet knows no
// leader: nobody sends it anything until the join adds it.
func (r *Role) join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	if n := r.node.Load(); n != nil {
		if id, _ := n.Leader(); id != 0 {
			return (&metaService{r: r}).Join(ctx, req)
		}
	}
	var lastErr error = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no meta node to join through")
	for _, p := range r.deps.Peers.MetaPeers() {
		if p.NodeId == r.cfg.NodeID {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := pb.NewDRPCMetaClient(r.pool.Conn(p.RpcAddress)).Join(cctx, req)
		cancel()
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// promoteWhenCaughtUp waits until this non-voter applied what the leader had
// committed when it joined, then asks to become a voter.
func (r *Role) promoteWhenCaughtUp(ctx context.Context, commitIndex uint64) {
	n := r.node.Load()
	// Polled: commitIndex may be a configuration entry, which the state
	// machine (and so its WaitApplied) never sees.
	pace := backoff.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	for n.Status().AppliedIndex < commitIndex {
		if !pace.Wait(ctx) {
			return
		}
	}
	if _, err := r.joinUntilDone(ctx, true); err == nil {
		r.log.Info("promoted to voter")
	}
}

// leaderLoop runs, on each gain of leadership, what a new leader owes the
// cluster: a barrier (so its state is current) and, on the first leader, the
// cluster id command.
func (r *Role) leaderLoop(ctx context.Context) {
	n := r.node.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-n.LeaderCh():
			if !leader {
				continue
			}
			r.log.Info("became metadata leader", "term", n.Status().Term)
			if err := n.Barrier(ctx); err != nil {
				r.log.Warn("leader barrier", "err", err)
				continue
			}
			if n.State().ClusterID() == "" {
				_, err := n.Propose(ctx, &pb.Command{RequestId: []byte("init/" + r.deps.ClusterID()),
					Op: &pb.Command_InitCluster{InitCluster: &pb.InitCluster{ClusterId: r.deps.ClusterID()}}})
				if err != nil {
					r.log.Warn("init cluster", "err", err)
				}
			}
		}
	}
}
