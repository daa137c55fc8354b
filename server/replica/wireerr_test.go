package replica

import (
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/storage/kvstore/kverr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestWireError: the log's and the KV store's sentinels, however wrapped,
// reach the client under their table's code; anything else stays wrapped, and
// the client sees INTERNAL.
func TestWireError(t *testing.T) {
	const unmapped = pb.ErrorCode(-1) // WireError wraps it; the client sees INTERNAL
	for _, tc := range []struct {
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
		{kverr.ErrClosed, pb.ErrorCode_ERROR_CODE_UNAVAILABLE},
		{kverr.ErrCorrupt, pb.ErrorCode_ERROR_CODE_CORRUPT},
		{kverr.ErrBatchTooLarge, unmapped},
		{errors.New("disk on fire"), unmapped},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := WireError(fmt.Errorf("segment 7: %w", tc.err))
			var wire *transport.Error
			switch {
			case tc.code == unmapped:
				if errors.As(err, &wire) || !errors.Is(err, tc.err) {
					t.Fatalf("WireError = %v (%T), want the error wrapped, no wire code", err, err)
				}
			case !errors.As(err, &wire) || wire.Code != tc.code:
				t.Fatalf("WireError = %v, want code %v", err, tc.code)
			}
		})
	}
}
