package replica

import (
	"context"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// RowScanner is the paged scan of a primary-key bucket's rows, served by the
// KV side of its leader (kvreplica's implements it). It belongs in KV and
// stands apart only until it moves there; meanwhile a KV side without it
// answers ScanRows with INVALID_REQUEST.
type RowScanner interface {
	ScanRows(ctx context.Context, req *pb.ScanRowsRequest) (*pb.ScanRowsResponse, error)
}

// ScanRows answers a page of a primary-key bucket's rows on its leader.
func (m *Manager) ScanRows(ctx context.Context, req *pb.ScanRowsRequest) (*pb.ScanRowsResponse, error) {
	r, err := m.kvReplica(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	s, ok := r.kv.(RowScanner)
	if !ok {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "bucket %s: this node's KV side cannot scan rows", r.id)
	}
	resp, err := s.ScanRows(ctx, req)
	if err == nil {
		r.table().traffic.noteOut(len(resp.Rows), len(resp.RowSizes))
	}
	return resp, err
}
