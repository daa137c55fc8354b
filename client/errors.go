package client

import (
	"errors"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport"
)

// Errors of the data-plane API. Server errors come back as *transport.Error
// values: match them with errors.Is against the transport sentinels
// (transport.ErrNotLeader, transport.ErrInvalidRecord, ...).
var (
	// ErrWriterClosed is returned by writes to a closed writer, and fails the
	// batches a Close gave up on.
	ErrWriterClosed = pkgerr.New("client", "writer closed")
	// ErrOutcomeUnknown fails a batch whose fate cannot be known: it was
	// sent and not answered, then the batches before it failed and the
	// writer gave up its writer id (docs/replication.md, Writers 5).
	ErrOutcomeUnknown = pkgerr.New("client", "batch outcome unknown")
	// ErrClosed: the Client was closed.
	ErrClosed = pkgerr.New("client", "closed")
	// ErrDeliveryTimeout fails a batch that was not acknowledged within the
	// writer's DeliveryTimeout; it wraps the last error met. The batch may or
	// may not have been written.
	ErrDeliveryTimeout = pkgerr.New("client", "delivery timeout")
	// ErrNoLeader says the metadata names no reachable leader for a bucket
	// (offline, or a leader whose address is unknown). Writers and scanners
	// retry it after refreshing the metadata.
	ErrNoLeader = pkgerr.New("client", "bucket has no known leader")
	// ErrRowTooLarge refuses, before sending it, a row too large for any
	// batch the cluster takes.
	ErrRowTooLarge = errors.New("row too large")
	// ErrTableChanged is returned by Refresh when the table was dropped and
	// created again under the same name: the handle no longer describes it.
	ErrTableChanged = pkgerr.New("client", "table was dropped and recreated")
	// ErrScannerClosed is returned by a closed LogScanner.
	ErrScannerClosed = pkgerr.New("client", "scanner closed")
	// ErrNotSubscribed is returned by Poll with no subscribed bucket.
	ErrNotSubscribed = pkgerr.New("client", "no bucket subscribed")
	// ErrNotLogTable is returned when appending to a primary-key table.
	ErrNotLogTable = pkgerr.New("client", "not a log table")
	// ErrNotPrimaryKeyTable is returned when upserting into or looking up
	// a log table.
	ErrNotPrimaryKeyTable = pkgerr.New("client", "not a primary-key table")
	// ErrNotTargetColumn refuses a partial update whose row sets a column
	// outside the writer's PartialColumns.
	ErrNotTargetColumn = pkgerr.New("client", "column outside the partial update")
	// ErrNoPrefixLookup is returned by PrefixLookup for a table whose bucket
	// key is not a strict prefix of its primary key.
	ErrNoPrefixLookup = pkgerr.New("client", "bucket key is not a strict prefix of the primary key")
	// ErrPrefixTruncated comes with the rows of a PrefixLookup that matched
	// more rows than the server returns at once.
	ErrPrefixTruncated = pkgerr.New("client", "prefix lookup truncated")
	// ErrLookuperClosed is returned by a closed Lookuper.
	ErrLookuperClosed = pkgerr.New("client", "lookuper closed")
	// ErrNoBucketKey is returned by BucketOf for a table without a bucket
	// key, whose rows are spread by sticky batching instead.
	ErrNoBucketKey = pkgerr.New("client", "table has no bucket key")
)

// retriable reports whether a data-plane call that failed with err may
// succeed if sent again after fresh metadata.
func retriable(err error) bool {
	return transport.IsRetriable(err) || errors.Is(err, ErrNoLeader)
}
