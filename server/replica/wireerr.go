package replica

import (
	"errors"
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/kvstore/kverr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// storageErrorCodes is the one table from the sentinel errors of the
// storage layer and the protocol core to the wire codes clients see, for
// the log and the KV paths alike:
// a store that is closing is retriable elsewhere (UNAVAILABLE), corruption
// is its own class, and a write the log lost to a new epoch was refused by
// a leader that no longer leads. The first row that matches wins.
var storageErrorCodes = []struct {
	err  error
	code pb.ErrorCode
}{
	{logstore.ErrOffsetOutOfRange, pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE},
	{logstore.ErrCorrupt, pb.ErrorCode_ERROR_CODE_CORRUPT},
	{logstore.ErrBatchTooLarge, pb.ErrorCode_ERROR_CODE_TOO_LARGE},
	{logstore.ErrInvalidBatch, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
	{logstore.ErrStaleEpoch, pb.ErrorCode_ERROR_CODE_NOT_LEADER},
	{logstore.ErrTruncated, pb.ErrorCode_ERROR_CODE_NOT_LEADER},
	{logstore.ErrClosed, pb.ErrorCode_ERROR_CODE_UNAVAILABLE},
	// A failed log takes its replica out of service: another replica
	// leads next (failure.go).
	{logstore.ErrSyncFailed, pb.ErrorCode_ERROR_CODE_NOT_LEADER},
	{kverr.ErrClosed, pb.ErrorCode_ERROR_CODE_UNAVAILABLE},
	{kverr.ErrCorrupt, pb.ErrorCode_ERROR_CODE_CORRUPT},
	// The protocol core's refusals.
	{replication.ErrNotLeader, pb.ErrorCode_ERROR_CODE_NOT_LEADER},
	{replication.ErrNotEnoughReplicas, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS},
	{replication.ErrNotEnoughReplicasAfterAppend, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS_AFTER_APPEND},
	{replication.ErrFenced, pb.ErrorCode_ERROR_CODE_FENCED},
	{replication.ErrNotReplica, pb.ErrorCode_ERROR_CODE_FENCED},
	{replication.ErrUnknownLeaderEpoch, pb.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH},
	{replication.ErrOutOfRange, pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE},
	{replication.ErrOutOfOrderSequence, pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE},
}

// WireError maps an error of the log or KV store to the wire error its
// table row names; an error no row names is returned wrapped, and reaches
// the client as INTERNAL.
func WireError(err error) error {
	for _, row := range storageErrorCodes {
		if errors.Is(err, row.err) {
			return transport.Errorf(row.code, "%v", err)
		}
	}
	return pkgerr.Errorf("replica", "%w", err)
}

// wireError is WireError with the bucket named; nil stays nil.
func (r *Replica) wireError(err error) error {
	if err == nil {
		return nil
	}
	return WireError(fmt.Errorf("bucket %s: %w", r.id, err))
}
