package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

// Defaults of the zero LogScannerOptions.
const (
	DefaultScanMaxWait  = 500 * time.Millisecond
	DefaultScanMaxBytes = 4 << 20
)

// fetchSlack is how much longer than MaxWait a fetch may take before the
// scanner gives up on it and asks again.
const fetchSlack = 10 * time.Second

// listOffsetsTimeout bounds one ListOffsets call resolving a start position.
const listOffsetsTimeout = 10 * time.Second

// LogScannerOptions configure a LogScanner. The zero value is usable.
type LogScannerOptions struct {
	// MaxWait is how long Poll waits for records before it returns none,
	// and how long a fetch waits on the server. Default 500 ms.
	MaxWait time.Duration
	// MaxBytes bounds the record bytes of one fetch from one node. A
	// bucket with more to read has its next fetch in flight while its
	// last answer is decoded (the scanner reads ahead), so a Poll returns
	// at most about twice this much per node. The server always returns
	// at least one whole batch. Default 4 MiB.
	MaxBytes int
	// Logger receives the scanner's messages; nil discards them.
	Logger *slog.Logger
	// Columns, when set, are the only columns read, by name, in the order
	// given: the scanner's rows are rows of Schema(), those columns of
	// the handle's schema. Leaders cut Arrow batches to them before
	// sending (projection pushdown: the other columns never leave the
	// server); row batches, and remote segments read straight from
	// object storage, come whole and are cut here.
	Columns []string
}

// Validate reports the first invalid field.
func (o *LogScannerOptions) Validate() error {
	if o.MaxWait < 0 || o.MaxBytes < 0 {
		return pkgerr.Errorf("client", "log scanner: negative MaxWait or MaxBytes")
	}
	if o.MaxWait > time.Hour {
		return pkgerr.Errorf("client", "log scanner: MaxWait %v is above an hour", o.MaxWait)
	}
	return nil
}

func (o LogScannerOptions) withDefaults() LogScannerOptions {
	if o.MaxWait == 0 {
		o.MaxWait = DefaultScanMaxWait
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultScanMaxBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ScanRecord is one record read from a bucket.
type ScanRecord struct {
	// Partition is the name of the record's partition ("dt=2026-12-03")
	// in a partitioned table; "" otherwise.
	Partition string
	Bucket    int32
	Offset    int64
	// Timestamp is the commit time of the record's batch.
	Timestamp time.Time
	// Change is what the record does: record.AppendOnly in log tables;
	// Insert, UpdateBefore, UpdateAfter or Delete in the changelog of a
	// primary-key table.
	Change record.ChangeType
	// SchemaID is the schema version the record was written in. Row is
	// of the scanner's table's schema (Table.SchemaID) whatever it says:
	// rows of an older version have null in the columns added since,
	// rows of a newer one lack the columns added after the handle's.
	SchemaID int16
	// Row is the record's row, a copy the caller owns: a row of the
	// scanner's Schema.
	Row []byte
}

// LogScanner reads the records of subscribed buckets, in offset order per
// bucket, below each bucket's high watermark: only committed records.
//
// Poll sends one fetch per bucket leader node, covering the subscribed
// buckets it leads, and returns what the first answers bring; fetches still
// waiting on other nodes carry on and are picked up by the next Poll. A
// bucket whose leader moved (NOT_LEADER, UNKNOWN_LEADER_EPOCH, UNAVAILABLE,
// ...) is fetched again from the new leader after a metadata refresh and a
// backoff. Every batch received has its CRC checked.
//
// A LogScanner is meant for one goroutine: its methods must not be called
// concurrently.
type LogScanner struct {
	t     *Table
	opts  LogScannerOptions
	codec *record.Codec // made on the first compressed batch
	conv  rowConverter  // rows of other schema versions to the handle's
	proj  *projection   // nil: every column
	dec   batchDecoders
	stats ScannerStats

	subs map[subKey]*subscription
	gen  uint64 // of the last Subscribe
	// stale holds the handles whose metadata a fetch found stale, with
	// the version it came from (for refreshAfter).
	stale      map[*Table]uint64
	pendingErr error // met by a Poll that had records to return
	closed     bool

	inflight map[*fetchCall]struct{}
	wg       sync.WaitGroup // the fetch goroutines
	// noRemoteRefs: a direct read of a remote segment failed, so fetches
	// ask leaders to read remote segments themselves.
	noRemoteRefs atomic.Bool

	mu        sync.Mutex
	completed []*fetchCall
	notify    chan struct{} // capacity 1: a fetch completed
}

// subKey names a subscribed bucket: the id its buckets are keyed by (the
// table's or a partition's) and its number.
type subKey struct {
	id     uint64
	bucket int32
}

// subscription is the state of one subscribed bucket.
type subscription struct {
	t        *Table // the table's handle, or the partition's
	key      subKey
	gen      uint64
	from     StartPosition
	resolved bool  // position is known
	position int64 // the next offset to return
	hw       int64 // -1 until a fetch reports one
	inflight bool  // in a fetch now
	retryAt  time.Time
	failures int
}

// NewLogScanner returns a scanner with no subscription. It does no I/O.
func (t *Table) NewLogScanner(opts LogScannerOptions) (*LogScanner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	proj, err := newProjection(t, opts.Columns)
	if err != nil {
		return nil, err
	}
	return &LogScanner{
		t:        t,
		opts:     opts.withDefaults(),
		proj:     proj,
		subs:     make(map[subKey]*subscription),
		stale:    make(map[*Table]uint64),
		inflight: make(map[*fetchCall]struct{}),
		notify:   make(chan struct{}, 1),
	}, nil
}

// ScannerStats counts what a scanner read.
type ScannerStats struct {
	// Bytes of record batches received: as stored, or cut to the
	// scanner's columns by the leaders.
	Bytes int64 `json:"bytes"`
}

// Stats returns what the scanner has read so far.
func (s *LogScanner) Stats() ScannerStats { return s.stats }

// Subscribe starts reading bucket at from, replacing any earlier
// subscription of it. Positions other than AtOffset are resolved by the
// next Poll. The buckets of a partitioned table are its partitions':
// subscribe them with SubscribePartition.
func (s *LogScanner) Subscribe(bucket int32, from StartPosition) error {
	if s.t.parts != nil {
		return pkgerr.Errorf("client", "subscribe bucket %d: %s is partitioned: subscribe a partition's bucket (SubscribePartition)",
			bucket, s.t.qualifiedName())
	}
	return s.subscribe(s.t, bucket, from)
}

// SubscribePartition starts reading bucket of one partition of a
// partitioned table (partition as Table.PartitionName takes it) at from,
// replacing any earlier subscription of it. It loads the partition's
// metadata on first use: ErrUnknownPartition when it does not exist.
func (s *LogScanner) SubscribePartition(ctx context.Context, partition string, bucket int32, from StartPosition) error {
	if s.closed {
		return ErrScannerClosed
	}
	if s.t.part != nil {
		// The scanner of a partition's handle reads that partition.
		name, err := s.t.PartitionName(partition)
		if err != nil {
			return err
		}
		if name != s.t.part.Name {
			return pkgerr.Errorf("client", "subscribe partition %s: the scanner reads partition %s only", name, s.t.part.Name)
		}
		return s.subscribe(s.t, bucket, from)
	}
	pt, err := s.t.Partition(ctx, partition)
	if err != nil {
		return err
	}
	return s.subscribe(pt, bucket, from)
}

// subscribe subscribes bucket of the handle t (the scanner's, or one of
// its partitions').
func (s *LogScanner) subscribe(t *Table, bucket int32, from StartPosition) error {
	if s.closed {
		return ErrScannerClosed
	}
	if err := t.checkBucket(bucket); err != nil {
		return err
	}
	s.gen++
	key := subKey{id: t.info.ID, bucket: bucket}
	sub := &subscription{t: t, key: key, gen: s.gen, from: from, hw: -1}
	if from.kind == positionOffset {
		if from.offset < 0 {
			return pkgerr.Errorf("client", "subscribe %s bucket %d: negative offset %d", t.qualifiedName(), bucket, from.offset)
		}
		sub.resolved, sub.position = true, from.offset
	}
	s.subs[key] = sub
	return nil
}

// Unsubscribe stops reading bucket.
func (s *LogScanner) Unsubscribe(bucket int32) {
	delete(s.subs, subKey{id: s.t.info.ID, bucket: bucket})
}

// UnsubscribePartition stops reading bucket of a partition; a partition
// not subscribed is no error.
func (s *LogScanner) UnsubscribePartition(partition string, bucket int32) {
	if sub := s.partitionSub(partition, bucket); sub != nil {
		delete(s.subs, sub.key)
	}
}

// partitionSub finds the subscription of a partition's bucket.
func (s *LogScanner) partitionSub(partition string, bucket int32) *subscription {
	name, err := s.t.PartitionName(partition)
	if err != nil {
		return nil
	}
	for key, sub := range s.subs {
		if key.bucket == bucket && sub.t.part != nil && sub.t.part.Name == name {
			return sub
		}
	}
	return nil
}

// Position is the offset of the next record Poll returns from bucket;
// false when bucket is not subscribed or its start is not resolved yet.
func (s *LogScanner) Position(bucket int32) (int64, bool) {
	return s.subs[subKey{id: s.t.info.ID, bucket: bucket}].positionOf()
}

// PartitionPosition is Position of a partition's bucket.
func (s *LogScanner) PartitionPosition(partition string, bucket int32) (int64, bool) {
	return s.partitionSub(partition, bucket).positionOf()
}

func (sub *subscription) positionOf() (int64, bool) {
	if sub == nil || !sub.resolved {
		return 0, false
	}
	return sub.position, true
}

// HighWatermark is bucket's high watermark as of the last fetch; false
// before the first one.
func (s *LogScanner) HighWatermark(bucket int32) (int64, bool) {
	return s.subs[subKey{id: s.t.info.ID, bucket: bucket}].highWatermark()
}

// PartitionHighWatermark is HighWatermark of a partition's bucket.
func (s *LogScanner) PartitionHighWatermark(partition string, bucket int32) (int64, bool) {
	return s.partitionSub(partition, bucket).highWatermark()
}

func (sub *subscription) highWatermark() (int64, bool) {
	if sub == nil || sub.hw < 0 {
		return 0, false
	}
	return sub.hw, true
}

// Poll returns the next records of the subscribed buckets, waiting up to
// MaxWait for some; none when none came. A bucket's fatal error (its offset
// out of range, a corrupt batch, an unknown table) is returned once, after
// the records other buckets brought if any; the bucket is then fetched
// again as it is, so re-Subscribe or Unsubscribe it.
func (s *LogScanner) Poll(ctx context.Context) ([]ScanRecord, error) {
	switch {
	case s.closed:
		return nil, ErrScannerClosed
	case s.pendingErr != nil:
		err := s.pendingErr
		s.pendingErr = nil
		return nil, err
	case len(s.subs) == 0:
		return nil, ErrNotSubscribed
	}
	deadline := time.Now().Add(s.opts.MaxWait)
	var out []ScanRecord
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		for t, seen := range s.stale {
			delete(s.stale, t)
			if err := t.refreshAfter(ctx, seen); err != nil && !retriable(err) && ctx.Err() == nil {
				return nil, err
			}
		}
		if err := s.resolve(ctx); err != nil {
			return nil, err
		}
		s.issue()
		var err error
		out, err = s.collect(ctx, out)
		if len(out) > 0 {
			s.pendingErr = err
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		now := time.Now()
		wake := deadline
		for _, sub := range s.subs {
			if !sub.inflight && sub.retryAt.After(now) && sub.retryAt.Before(wake) {
				wake = sub.retryAt
			}
		}
		if !now.Before(deadline) {
			return nil, nil
		}
		timer.Reset(wake.Sub(now))
		select {
		case <-s.notify:
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

// Close stops the fetches in flight and waits for them.
func (s *LogScanner) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	for call := range s.inflight {
		call.cancel()
	}
	s.wg.Wait()
	return nil
}

// resolve turns the start positions of new subscriptions into offsets.
func (s *LogScanner) resolve(ctx context.Context) error {
	now := time.Now()
	for key, sub := range s.subs {
		if sub.resolved || sub.retryAt.After(now) {
			continue
		}
		bucket := key.bucket
		addr, version, err := sub.t.leader(bucket)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, listOffsetsTimeout)
			var offset int64
			offset, err = sub.t.listOffset(cctx, addr, bucket, sub.from)
			cancel()
			if err == nil {
				sub.resolved, sub.position, sub.failures = true, offset, 0
				continue
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if sub.t.part != nil && errors.Is(err, transport.ErrUnknownTable) {
			return s.partitionDropped(sub, err)
		}
		if !retriable(err) {
			return pkgerr.Errorf("client", "subscribe %s bucket %d at %v: %w", sub.t.qualifiedName(), bucket, sub.from, err)
		}
		s.retryLater(sub, version, err)
	}
	return nil
}

// partitionDropped ends the subscription of a bucket whose nodes no
// longer know its partition's id (the partition was dropped), and has
// the table's handle forget the partition's: subscribing the partition
// again loads the one of that name now, if one was created since, where
// the old handle would fail the same way for ever.
func (s *LogScanner) partitionDropped(sub *subscription, cause error) error {
	delete(s.subs, sub.key)
	s.t.forgetPartition(sub.t)
	return fmt.Errorf("%w: %s bucket %d was dropped (%v)", ErrUnknownPartition, sub.t.qualifiedName(), sub.key.bucket, cause)
}

// retryLater backs a bucket off after a retriable failure and asks for
// fresh metadata.
func (s *LogScanner) retryLater(sub *subscription, version uint64, err error) {
	d := retryBackoffMin << min(sub.failures, 8)
	sub.retryAt = time.Now().Add(min(d, retryBackoffMax))
	sub.failures++
	s.stale[sub.t] = max(s.stale[sub.t], version)
	s.opts.Logger.Debug("bucket fetch failed, retrying", "table", sub.t.qualifiedName(), "bucket", sub.key.bucket, "error", err,
		"failures", sub.failures)
}
