package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// formRetry paces discovery while a cluster forms.
const formRetry = 200 * time.Millisecond

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
func (s *Server) form(ctx context.Context) error {
	raftDir := s.raftDir()
	hasState, err := raftmeta.HasState(raftDir)
	if err != nil {
		return err
	}
	if hasState {
		if s.ClusterID() == "" {
			return fmt.Errorf("server: %s has Raft state but no cluster id in %s", raftDir, identityFile)
		}
		_, err := s.openRaft()
		return err
	}
	if s.cfg.BootstrapExpect == 0 && len(s.cfg.Join) == 0 {
		return fmt.Errorf("server: nothing to do: give --bootstrap-expect to form a cluster or --join to join one")
	}
	lastLog := time.Time{}
	// Discovery polls at a steady pace (peers may start at any moment);
	// the jitter keeps nodes started together from greeting in step.
	pace := backoff.Backoff{Min: formRetry, Max: formRetry, Jitter: true}
	for {
		responses := s.helloAll(ctx)
		if done, err := s.tryJoinFormed(ctx, responses); done || err != nil {
			return err
		}
		if done, err := s.tryBootstrap(ctx, responses); done || err != nil {
			return err
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			s.log.Info("waiting for peers to form a cluster", "known_meta_nodes", len(s.metaPeers()),
				"bootstrap_expect", s.cfg.BootstrapExpect, "join", s.cfg.Join)
		}
		if !pace.Wait(ctx) {
			return ctx.Err()
		}
	}
}

func (s *Server) raftDir() string { return metaDir(s.cfg.DataDir) }

// metaDir is where a node keeps its Raft state and metadata state file.
func metaDir(dataDir string) string { return dataDir + "/meta" }

// tryJoinFormed joins a cluster a peer says is formed.
func (s *Server) tryJoinFormed(ctx context.Context, responses []*pb.HelloResponse) (bool, error) {
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
	if err := s.adoptClusterID(formed.ClusterId); err != nil {
		return false, err
	}
	wiped := formed.YourIncarnation != "" && formed.YourIncarnation != s.id.Incarnation
	if wiped {
		s.log.Warn("this node's folder is new but the cluster knows the node: rejoining as a new incarnation",
			"old_incarnation", formed.YourIncarnation, "incarnation", s.id.Incarnation)
		resp, err := s.joinUntilDone(ctx, false)
		if err != nil {
			return false, err
		}
		if _, err := s.openRaft(); err != nil {
			return false, err
		}
		s.goRun(func() { s.promoteWhenCaughtUp(ctx, resp.CommitIndex) })
		return true, nil
	}
	if _, err := s.openRaft(); err != nil {
		return false, err
	}
	s.goRun(func() {
		resp, err := s.joinUntilDone(ctx, false)
		if err == nil && !resp.Voter {
			s.promoteWhenCaughtUp(ctx, resp.CommitIndex)
		}
	})
	return true, nil
}

// tryBootstrap forms a new cluster when enough meta nodes know each other.
func (s *Server) tryBootstrap(ctx context.Context, responses []*pb.HelloResponse) (bool, error) {
	if s.cfg.BootstrapExpect == 0 {
		return false, nil
	}
	peers := s.metaPeers()
	if len(peers) < s.cfg.BootstrapExpect {
		return false, nil
	}
	founders := peers[:s.cfg.BootstrapExpect]
	if founders[0].NodeId != s.cfg.NodeID {
		// Not the seed: wait for the seed to report the cluster it formed;
		// tryJoinFormed then starts Raft (the seed's configuration names us).
		return false, nil
	}
	id := s.ClusterID()
	if id == "" {
		id = newID()
		if err := s.adoptClusterID(id); err != nil {
			return false, err
		}
	}
	n, err := s.openRaft()
	if err != nil {
		return false, err
	}
	var servers []raftmeta.Server
	for _, p := range founders {
		servers = append(servers, raftmeta.Server{ID: p.NodeId, Address: p.RpcAddress, Voter: true})
	}
	if err := n.Bootstrap(servers); err != nil {
		return false, fmt.Errorf("server: bootstrap: %w", err)
	}
	s.log.Info("bootstrapped a new cluster", "cluster_id", id, "voters", len(servers))
	return true, nil
}

// metaPeers lists the known meta nodes, this one included, by id.
func (s *Server) metaPeers() []*pb.PeerInfo {
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	out := []*pb.PeerInfo{s.selfInfo()}
	for _, p := range s.peers {
		if p.NodeId != s.cfg.NodeID && slices.Contains(p.Roles, RoleMeta) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *pb.PeerInfo) int { return int(a.NodeId) - int(b.NodeId) })
	return out
}

func (s *Server) selfInfo() *pb.PeerInfo {
	return &pb.PeerInfo{NodeId: s.cfg.NodeID, RpcAddress: s.advertise, Roles: s.cfg.Roles}
}

// rememberPeer records a peer met through Hello. The table is bounded
// (maxHelloPeers) and takes only usable entries: every later Hello answers
// with its meta peers, and a node once told of 500,000 made every answer
// too large for a plain client to receive, for good.
func (s *Server) rememberPeer(p *pb.PeerInfo) {
	if !usablePeer(p) || p.NodeId == s.cfg.NodeID {
		return
	}
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	if _, known := s.peers[p.NodeId]; !known && len(s.peers) >= maxHelloPeers {
		s.log.Debug("peer table full: not remembering a peer met through hello", "peer", p.NodeId, "max_peers", maxHelloPeers)
		return
	}
	s.peers[p.NodeId] = &pb.PeerInfo{NodeId: p.NodeId, RpcAddress: p.RpcAddress, Roles: p.Roles}
}

// helloAll greets every --join address and every peer met so far.
func (s *Server) helloAll(ctx context.Context) []*pb.HelloResponse {
	addrs := map[string]bool{}
	for _, a := range s.cfg.Join {
		addrs[a] = true
	}
	s.peersMu.Lock()
	known := make([]*pb.PeerInfo, 0, len(s.peers))
	for _, p := range s.peers {
		addrs[p.RpcAddress] = true
		known = append(known, p)
	}
	s.peersMu.Unlock()
	delete(addrs, s.advertise)
	req := &pb.HelloRequest{NodeId: s.cfg.NodeID, RpcAddress: s.advertise, Roles: s.cfg.Roles, Peers: known}
	var out []*pb.HelloResponse
	for addr := range addrs {
		cctx, cancel := context.WithTimeout(ctx, helloTimeout)
		resp, err := pb.NewDRPCMetaClient(s.pool.Conn(addr)).Hello(cctx, req)
		cancel()
		s.diagnoseJoin(ctx, addr, resp, err)
		if err != nil {
			continue
		}
		s.rememberPeer(&pb.PeerInfo{NodeId: resp.NodeId, RpcAddress: addr, Roles: resp.Roles})
		if resp.GossipAddress != "" {
			s.peersMu.Lock()
			s.gossipAddrs[resp.NodeId] = resp.GossipAddress
			s.peersMu.Unlock()
		}
		for _, p := range resp.Peers {
			s.rememberPeer(p)
		}
		out = append(out, resp)
	}
	return out
}

// joinUntilDone asks the leader (through any meta node) to make this node a
// member, until it says yes or ctx ends.
func (s *Server) joinUntilDone(ctx context.Context, promote bool) (*pb.JoinResponse, error) {
	req := &pb.JoinRequest{NodeId: s.cfg.NodeID, RaftAddress: s.advertise, Incarnation: s.id.Incarnation, Promote: promote}
	pace := backoff.Backoff{Min: formRetry, Max: 2 * time.Second, Jitter: true}
	for {
		resp, err := s.join(ctx, req)
		if err == nil {
			s.log.Info("joined the metadata group", "voter", resp.Voter)
			return resp, nil
		}
		s.log.Debug("join attempt failed", "err", err)
		if !pace.Wait(ctx) {
			return nil, ctx.Err()
		}
	}
}

// join sends one join request: through this node's own Raft view when it
// knows a leader, otherwise to each known meta node in turn (which forwards
// it to the leader). A node that runs Raft but is not a member yet knows no
// leader: nobody sends it anything until the join adds it.
func (s *Server) join(ctx context.Context, req *pb.JoinRequest) (*pb.JoinResponse, error) {
	if n := s.node.Load(); n != nil {
		if id, _ := n.Leader(); id != 0 {
			return (&metaService{s: s}).Join(ctx, req)
		}
	}
	var lastErr error = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no meta node to join through")
	for _, p := range s.metaPeers() {
		if p.NodeId == s.cfg.NodeID {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := pb.NewDRPCMetaClient(s.pool.Conn(p.RpcAddress)).Join(cctx, req)
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
func (s *Server) promoteWhenCaughtUp(ctx context.Context, commitIndex uint64) {
	n := s.node.Load()
	// Polled: commitIndex may be a configuration entry, which the state
	// machine (and so its WaitApplied) never sees.
	pace := backoff.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	for n.Status().AppliedIndex < commitIndex {
		if !pace.Wait(ctx) {
			return
		}
	}
	if _, err := s.joinUntilDone(ctx, true); err == nil {
		s.log.Info("promoted to voter")
	}
}

// registerSelf records this node in the metadata (id, roles, addresses,
// incarnation), retrying until it is committed.
func (s *Server) registerSelf(ctx context.Context) {
	cmd := &pb.Command{RequestId: []byte(newID()), Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{
		Node: &pb.NodeRecord{
			Id: s.cfg.NodeID, Roles: s.cfg.Roles, RpcAddress: s.advertise, GossipAddress: s.cfg.Gossip,
			Rack: s.cfg.Rack, Incarnation: s.id.Incarnation,
		},
	}}}
	pace := backoff.Backoff{Min: formRetry, Max: 2 * time.Second, Jitter: true}
	for {
		res, err := s.propose(ctx, cmd)
		if err == nil {
			epoch := res.GetNode().GetNodeEpoch()
			if epoch == 0 {
				panic("server: a committed registration has no node epoch")
			}
			s.log.Info("registered", "node_epoch", epoch)
			s.registeredAt.Store(epoch)
			close(s.registered)
			return
		}
		if !registrationRetriable(err) {
			s.log.Error("registration refused", "err", err)
			why := err.Error()
			s.registerErr.Store(&why)
			return
		}
		if !pace.Wait(ctx) {
			return
		}
	}
}

// registrationRetriable reports whether a failed registration is tried
// again: wire errors marked retriable, and the local Raft node's leader
// trouble (no leader yet, a lost leadership), which a meta node meets
// proposing its own registration while the group elects its first leader.
// Treating "no leader" as a refusal left such a node unregistered, with no
// tablet to place tables on, until it restarted.
func registrationRetriable(err error) bool {
	return transport.IsRetriable(err) || leaderTrouble(err)
}

// leaderLoop runs, on each gain of leadership, what a new leader owes the
// cluster: a barrier (so its state is current) and, on the first leader, the
// cluster id command.
func (s *Server) leaderLoop(ctx context.Context) {
	n := s.node.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-n.LeaderCh():
			if !leader {
				continue
			}
			s.log.Info("became metadata leader", "term", n.Status().Term)
			if err := n.Barrier(ctx); err != nil {
				s.log.Warn("leader barrier", "err", err)
				continue
			}
			if n.State().ClusterID() == "" {
				_, err := n.Propose(ctx, &pb.Command{RequestId: []byte("init/" + s.ClusterID()),
					Op: &pb.Command_InitCluster{InitCluster: &pb.InitCluster{ClusterId: s.ClusterID()}}})
				if err != nil {
					s.log.Warn("init cluster", "err", err)
				}
			}
		}
	}
}
