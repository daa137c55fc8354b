package server

import (
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// watchMetadata serves the metadata stream from this node's state: a full
// image when the watcher starts from 0 or from further back than the state
// machine keeps changes, then each committed change in order, as it is
// applied here (a follower's stream lags its applied index, never skips).
func (s *Server) watchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	n := s.node.Load()
	if n == nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", s.cfg.NodeID)
	}
	ctx := stream.Context()
	state := n.State()
	sent := req.FromIndex
	for {
		applied := state.AppliedIndex()
		updates, ok := state.Changes(sent)
		if !ok || sent == 0 {
			img, err := state.Image()
			if err != nil {
				return err
			}
			if err := stream.Send(img); err != nil {
				return err
			}
			sent = img.Index
			continue
		}
		for _, u := range updates {
			if err := stream.Send(u); err != nil {
				return err
			}
			sent = u.Index
		}
		if len(updates) > 0 {
			continue
		}
		if _, err := state.WaitApplied(ctx, max(applied, sent)); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
