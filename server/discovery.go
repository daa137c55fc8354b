package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The node's discovery of its peers, which both roles need: the Hello
// handler of the Meta service, the table of peers met through it, and the
// greetings a forming or joining node sends (meta.Peers).

// metaServer is the node's Meta service: the meta role's handlers, and
// Hello, which every node answers.
type metaServer struct {
	*meta.Service
	s *Server
}

func (m metaServer) Hello(_ context.Context, req *pb.HelloRequest) (*pb.HelloResponse, error) {
	s := m.s
	s.rememberPeer(&pb.PeerInfo{NodeId: req.NodeId, RpcAddress: req.RpcAddress, Roles: req.Roles})
	for _, p := range req.Peers {
		s.rememberPeer(p)
	}
	resp := &pb.HelloResponse{NodeId: s.cfg.NodeID, Roles: s.cfg.Roles, ClusterId: s.ClusterID(),
		Peers: s.metaPeers(), GossipAddress: s.cfg.Gossip}
	if n := s.meta.Node(); n != nil {
		resp.Formed = true
		if rec, err := n.State().Node(req.NodeId); err == nil {
			resp.YourIncarnation = rec.Incarnation
		}
	}
	return resp, nil
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

// checkCandidate greets addr and refuses, saying why, unless it answers as
// meta node id of this cluster with its metadata Raft running.
func (s *Server) checkCandidate(ctx context.Context, id uint32, addr string) error {
	o := s.greet(ctx, addr)
	if trouble, why := diagnoseHello(o); trouble != joinOK {
		code := pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
		if trouble == joinOtherCluster {
			code = pb.ErrorCode_ERROR_CODE_CLUSTER_MISMATCH
		}
		return transport.Errorf(code, "refusing to add node %d: %s does not answer as a node of this cluster (%s): %s. "+
			"Start the node first (floe serve --id %d --join ...); nothing was changed", id, addr, trouble, why, id)
	}
	r := o.resp
	switch {
	case r.NodeId != id:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"refusing to add node %d: %s answers as node %d; nothing was changed", id, addr, r.NodeId)
	case !slices.Contains(r.Roles, RoleMeta):
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"refusing to add node %d: it runs without the meta role (roles %s), so it holds no metadata; nothing was changed",
			id, strings.Join(r.Roles, ","))
	case r.ClusterId == "" || !r.Formed:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"refusing to add node %d: it is not part of a cluster yet (start it with --join); nothing was changed", id)
	}
	return nil
}

// greet sends one Hello to addr and, when it fails for another reason than
// a cluster mismatch, dials addr plainly to tell why.
func (s *Server) greet(ctx context.Context, addr string) helloOutcome {
	req := &pb.HelloRequest{NodeId: s.cfg.NodeID, RpcAddress: s.advertise, Roles: s.cfg.Roles}
	cctx, cancel := context.WithTimeout(ctx, helloTimeout)
	resp, err := pb.NewDRPCMetaClient(s.pool.Conn(addr)).Hello(cctx, req)
	cancel()
	o := helloOutcome{clusterID: s.ClusterID(), resp: resp, helloErr: err}
	if err != nil && !errors.Is(err, transport.ErrClusterMismatch) {
		o.dialErr = transport.ProbeDial(ctx, addr, helloTimeout)
	}
	return o
}

// nodePeers is the node's side of meta.Peers.
type nodePeers struct{ s *Server }

func (p nodePeers) HelloAll(ctx context.Context) []*pb.HelloResponse { return p.s.helloAll(ctx) }
func (p nodePeers) MetaPeers() []*pb.PeerInfo                        { return p.s.metaPeers() }
func (p nodePeers) CheckCandidate(ctx context.Context, id uint32, addr string) error {
	return p.s.checkCandidate(ctx, id, addr)
}
