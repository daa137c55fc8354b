package server

import (
	"context"

	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// callMeta runs fn against a meta node: this one when it has the meta role,
// otherwise each known meta address in turn, each attempt bounded by
// meta.ForwardTimeout (a paused meta node never answers).
func (s *Server) callMeta(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error {
	addrs := s.metaAddresses()
	var lastErr error = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no meta node known")
	for _, a := range addrs {
		actx, cancel := context.WithTimeout(ctx, meta.ForwardTimeout)
		err := fn(actx, pb.NewDRPCMetaClient(s.pool.Conn(a)))
		expired := actx.Err() != nil
		cancel()
		if err != nil && expired && ctx.Err() == nil {
			err = transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT, "meta node %s did not answer within %v", a, meta.ForwardTimeout)
		}
		if err == nil || !transport.IsRetriable(err) {
			return err
		}
		lastErr = err
	}
	return lastErr
}

// metaAddresses lists meta nodes to talk to, this node first when it is one.
func (s *Server) metaAddresses() []string {
	var out []string
	if s.cfg.HasRole(RoleMeta) {
		out = append(out, s.advertise)
	}
	for _, p := range s.metaPeers() {
		if p.RpcAddress != s.advertise {
			out = append(out, p.RpcAddress)
		}
	}
	for _, a := range s.cfg.Join {
		if a != s.advertise {
			out = append(out, a)
		}
	}
	return out
}

// registration waits until this run's registration is committed and
// returns its Raft index (the node epoch).
func (s *Server) registration(ctx context.Context) (uint64, error) {
	select {
	case <-s.registered:
		return s.registeredAt.Load(), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// tabletMeta is the node's side of tablet.Meta.
type tabletMeta struct{ s *Server }

func (m tabletMeta) Call(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error {
	return m.s.callMeta(ctx, fn)
}

func (m tabletMeta) Propose(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return m.s.meta.Propose(ctx, cmd)
}

func (m tabletMeta) Addresses() []string { return m.s.metaAddresses() }

func (m tabletMeta) Registration(ctx context.Context) (uint64, error) { return m.s.registration(ctx) }
