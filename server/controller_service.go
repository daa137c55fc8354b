package server

import (
	"context"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// AdjustIsr applies a bucket leader's ISR change through Raft; the state
// machine refuses it (FENCED) unless the leader, its epoch and the bucket
// epoch are current.
func (m *metaService) AdjustIsr(ctx context.Context, req *pb.AdjustIsrRequest) (*pb.AdjustIsrResponse, error) {
	if req.Change == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "adjust ISR without a change")
	}
	// A leader retries a proposal whose outcome it does not know with the
	// same request id: the state machine answers it with the first result.
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AdjustIsr{AdjustIsr: req.Change}})
	if err != nil {
		return nil, err
	}
	return &pb.AdjustIsrResponse{Bucket: res.GetBucket()}, nil
}

// AllocateWriterId hands out an idempotent writer id from the metadata
// counter.
func (m *metaService) AllocateWriterId(ctx context.Context, req *pb.AllocateWriterIdRequest) (*pb.AllocateWriterIdResponse, error) {
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AllocateWriterId{AllocateWriterId: &pb.AllocateWriterId{}}})
	if err != nil {
		return nil, err
	}
	return &pb.AllocateWriterIdResponse{WriterId: res.GetWriterId()}, nil
}

// WatchMetadata streams the committed metadata to a tablet node.
func (m *metaService) WatchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	return m.s.watchMetadata(req, stream)
}
