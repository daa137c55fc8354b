package kvreplica

import (
	"context"
	"time"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// Log is what the KV side needs of its bucket's log replica
// (*replica.Replica): the log below the high watermark, the leader's write
// path, and the node's change signal.
type Log interface {
	ID() replica.BucketID
	// Dir is the replica's folder; the store lives in Dir()/kv.
	Dir() string
	Codec() *record.Codec

	HighWatermark() int64
	StartOffset() int64
	EndOffset() int64
	// ReadBelow reads durable batches from offset from, below offset below.
	ReadBelow(from, below int64, maxBytes int) (*logstore.Records, error)
	SyncLog() error

	// LeaderEpoch is the replica's leader epoch, or NOT_LEADER.
	LeaderEpoch() (int32, error)
	// Write appends the log form of client batch b, built and appended by
	// derive, through the leader's idempotent write path, and answers per
	// acks, in the write's turn.
	Write(ctx context.Context, turn *replica.Turn, b record.Batch, acks int32, timeout time.Duration,
		derive func(epoch int32, appendLog replica.AppendLogFunc) error) (*pb.ProduceResponse, error)
	// AppendBarrier appends a control batch and waits until it commits.
	AppendBarrier(ctx context.Context, timeout time.Duration) (offset int64, epoch int32, err error)

	Changes() <-chan struct{}
	Notify()
	WaitChange(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool

	// ReadRemoteBelow reads committed batches of the remote log from
	// offset from (below the local log's start), about maxBytes; nil when
	// the remote log does not hold from or this node cannot read it.
	ReadRemoteBelow(ctx context.Context, from int64, maxBytes int) ([]byte, error)
	// NewestKVSnapshot is the bucket's newest committed KV snapshot (nil:
	// none), in RemoteStore (nil: this node has no remote storage).
	NewestKVSnapshot() *pb.KVSnapshot
	RemoteStore() tiering.ObjectStore
}

var _ Log = (*replica.Replica)(nil)
