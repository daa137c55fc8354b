package kvreplica

import (
	"context"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Limits of one ScanRows page.
const (
	// MaxScanRows bounds the rows of one page.
	MaxScanRows = 10000
	// MaxScanBytes bounds the row bytes of one page (past it by at most one
	// row of up to kvstore.MaxRowBytes), well below the transport's
	// message limit.
	MaxScanBytes = 4 << 20
)

var _ replica.RowScanner = (*kvReplica)(nil)

// ScanRows answers a page of the bucket's rows on its leader, from its store
// once it holds everything below the high watermark the call found (as a
// lookup is answered).
func (kv *kvReplica) ScanRows(ctx context.Context, req *pb.ScanRowsRequest) (*pb.ScanRowsResponse, error) {
	if len(req.AfterKey) > kvstore.MaxStoreKeyBytes {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"after_key of %d bytes: store keys have at most %d", len(req.AfterKey), kvstore.MaxStoreKeyBytes)
	}
	maxRows, maxBytes := MaxScanRows, MaxScanBytes
	if req.MaxRows > 0 && int(req.MaxRows) < maxRows {
		maxRows = int(req.MaxRows)
	}
	if req.MaxBytes > 0 && int(req.MaxBytes) < maxBytes {
		maxBytes = int(req.MaxBytes)
	}
	epoch, st, err := kv.readFence(ctx, false)
	if err != nil {
		return nil, err
	}
	page, err := st.ScanPage(req.AfterKey, maxRows, maxBytes, nil)
	if err != nil {
		return nil, replica.WireError(err)
	}
	info := kv.table()
	if page.Rows, page.Sizes, err = info.currentPacked(page.Rows, page.Sizes, page.SchemaIDs); err != nil {
		return nil, err
	}
	return &pb.ScanRowsResponse{Rows: page.Rows, RowSizes: page.Sizes, NextKey: page.LastKey, Done: page.Done,
		LeaderEpoch: epoch, AppliedOffset: page.AppliedOffset, SchemaId: int32(info.currentID())}, nil
}
