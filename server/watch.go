package server

import (
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// watchMetadata serves the metadata stream from this node's state: a full
// image when the watcher starts from 0 or from further back than the state
// machine keeps changes, then each committed change in order.
func (s *Server) watchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	n := s.node.Load()
	if n == nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", s.cfg.NodeID)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "metadata watch is not ready")
}
