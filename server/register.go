package server

import (
	"context"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// registerSelf records this node in the metadata (id, roles, addresses,
// incarnation), retrying until it is committed.
func (s *Server) registerSelf(ctx context.Context) {
	cmd := &pb.Command{RequestId: []byte(newID()), Op: &pb.Command_RegisterNode{RegisterNode: &pb.RegisterNode{
		Node: &pb.NodeRecord{
			Id: s.cfg.NodeID, Roles: s.cfg.Roles, RpcAddress: s.advertise, GossipAddress: s.cfg.Gossip,
			Rack: s.cfg.Rack, Incarnation: s.id.Incarnation,
		},
	}}}
	pace := backoff.Backoff{Min: meta.FormRetry, Max: 2 * time.Second, Jitter: true}
	for {
		res, err := s.meta.Propose(ctx, cmd)
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
	return transport.IsRetriable(err) || meta.LeaderTrouble(err)
}
