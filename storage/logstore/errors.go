package logstore

import "errors"

var (
	// ErrOffsetOutOfRange: the offset is below the log start or past its end.
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrCorrupt marks damaged data the log will not serve or truncate away:
	// a bad batch inside the durable part of the log.
	ErrCorrupt = errors.New("logstore: corrupt log")
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("logstore: log closed")
	// ErrStaleEpoch: a leader append or epoch assignment below the latest
	// epoch the log has seen.
	ErrStaleEpoch = errors.New("logstore: stale leader epoch")
	// ErrNonContiguous: a follower append that does not start at the log end
	// or whose batches do not follow each other.
	ErrNonContiguous = errors.New("logstore: batches not contiguous with the log")
	// ErrBatchTooLarge: a batch over the configured limit.
	ErrBatchTooLarge = errors.New("logstore: batch too large")
	// ErrInvalidBatch: a batch that fails its checks on append.
	ErrInvalidBatch = errors.New("logstore: invalid batch")
	// ErrTruncated: the log was truncated below an append before it became
	// durable; the append is lost.
	ErrTruncated = errors.New("logstore: append truncated before it was durable")
	// ErrSyncFailed: an fsync failed. The log refuses further writes: after a
	// failed fsync the page cache may have dropped the data (the kernel does
	// not report it twice), so only reopening and recovering is safe.
	ErrSyncFailed = errors.New("logstore: fsync failed")
)
