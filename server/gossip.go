package server

import (
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/transport/gossip"
)

// startGossip joins the node to the cluster's memberlist pool once the
// cluster id is known; seeds are the gossip addresses learned from peers and
// from the registered nodes.
func (s *Server) startGossip(ctx context.Context) error {
	seeds := s.gossipSeeds()
	if len(seeds) == 0 && len(s.cfg.Join) > 0 {
		s.helloAll(ctx)
		seeds = s.gossipSeeds()
	}
	g, err := gossip.New(gossip.Config{
		NodeID: s.cfg.NodeID, BindAddress: s.cfg.Gossip, RPCAddress: s.advertise, Roles: s.cfg.Roles,
		Incarnation: s.id.Incarnation, ClusterID: s.ClusterID(), Join: seeds, Profile: s.cfg.GossipProfile,
		KeyFile: s.cfg.GossipKeyFile, Logger: s.log,
	})
	if err != nil {
		return err
	}
	s.gossip.Store(g)
	return nil
}

// gossipSeeds lists other nodes' gossip addresses this node knows of.
func (s *Server) gossipSeeds() []string {
	var out []string
	s.peersMu.Lock()
	for _, a := range s.gossipAddrs {
		out = append(out, a)
	}
	s.peersMu.Unlock()
	if n := s.meta.Node(); n != nil {
		for _, rec := range n.State().Nodes() {
			if rec.Id != s.cfg.NodeID && rec.GossipAddress != "" {
				out = append(out, rec.GossipAddress)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// leaveGossip announces a graceful leave, so the controller moves this
// node's leaderships at once instead of after the failure grace period.
func (s *Server) leaveGossip() {
	g := s.gossip.Load()
	if g == nil {
		return
	}
	if err := g.Leave(2 * time.Second); err != nil {
		s.log.Debug("gossip leave", "err", err)
	}
}

func (s *Server) closeGossip() {
	if g := s.gossip.Load(); g != nil {
		if err := g.Close(); err != nil {
			s.log.Debug("gossip close", "err", err)
		}
	}
}
