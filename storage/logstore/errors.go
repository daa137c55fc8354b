package logstore

import (
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
)

var (
	// ErrOffsetOutOfRange: the offset is below the log start or past its end.
	ErrOffsetOutOfRange = pkgerr.New("logstore", "offset out of range")
	// ErrCorrupt marks damaged data the log will not serve or truncate away
	// by itself: a bad batch inside the durable part of the log. Damage to a
	// batch is reported as a *CorruptError, which matches ErrCorrupt.
	ErrCorrupt = pkgerr.New("logstore", "corrupt log")
	// ErrClosed: the log was closed.
	ErrClosed = pkgerr.New("logstore", "log closed")
	// ErrStaleEpoch: a leader append or epoch assignment below the latest
	// epoch the log has seen.
	ErrStaleEpoch = pkgerr.New("logstore", "stale leader epoch")
	// ErrNonContiguous: a follower append that does not start at the log end
	// or whose batches do not follow each other.
	ErrNonContiguous = pkgerr.New("logstore", "batches not contiguous with the log")
	// ErrBatchTooLarge: a batch over the configured limit.
	ErrBatchTooLarge = pkgerr.New("logstore", "batch too large")
	// ErrInvalidBatch: a batch that fails its checks on append.
	ErrInvalidBatch = pkgerr.New("logstore", "invalid batch")
	// ErrTruncated: the log was truncated below an append before it became
	// durable; the append is lost.
	ErrTruncated = pkgerr.New("logstore", "append truncated before it was durable")
	// ErrSyncFailed: an fsync failed (or a write the log cannot undo did),
	// and the log failed for good; the error wraps the cause. The log
	// refuses further writes: after a failed fsync the page cache may have
	// dropped the data (the kernel does not report it twice), so only
	// reopening, which recovers the last durable offset, is safe.
	ErrSyncFailed = pkgerr.New("logstore", "fsync failed")
)

// CorruptError reports a damaged batch: a length, header or checksum that
// does not hold, or a base offset that does not follow the batch before. It
// matches ErrCorrupt. Offset is where the damage starts, so a replica can
// Truncate(Offset) to drop the damaged suffix and fetch it again from a peer.
type CorruptError struct {
	// Offset is the first offset the damage makes unreadable: the base
	// offset the damaged batch should have.
	Offset int64
	// SegmentBase is the base offset of the segment holding the batch, and
	// Position the batch's byte position in it.
	SegmentBase int64
	Position    int64
	// Err says what is wrong.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("logstore: corrupt log at offset %d (segment %d, byte %d): %v",
		e.Offset, e.SegmentBase, e.Position, e.Err)
}

// Is makes a CorruptError match ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Err }
