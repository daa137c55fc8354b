package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// AppendWriter appends rows to a log table.
//
// Rows are batched per bucket: a batch is sent when it is full
// (BatchBytes), when its first row has waited Linger, on Flush and Close,
// and, with the default Linger, at once when the bucket has no batch in
// flight (rows then gather while batches are on their way). Each bucket
// has its own sender goroutine with up to MaxInFlight batches in flight, on
// one ordered stream per node; the node decides them in the order sent,
// and retries resend from the oldest unanswered batch, so rows keep their
// Append order within a bucket (docs/replication.md, Writers).
//
// Writes are idempotent: the writer has a writer id (allocated by the
// metadata service when its first batch is sent) and numbers each bucket's
// batches 0, 1, 2, …; a batch that fails with a retriable error (leader
// moved, not enough replicas, timeout, connection lost) is sent again, the
// same bytes after fresh metadata and a backoff, until it is acknowledged or
// DeliveryTimeout passes. The leader recognizes a batch it already has and
// answers with its original offsets, so a retried row is written once.
//
// A batch that fails for good fails every row in it (their futures, and the
// next Flush, report the error); its bucket then continues, under a fresh
// writer id where the failure leaves the bucket's view of the writer in
// doubt, so later rows are still written.
//
// Memory is bounded by MaxBufferedBytes: Append blocks while the rows held
// would exceed it. An AppendWriter is safe for concurrent use; rows
// appended by one goroutine keep their order within each bucket.
type AppendWriter struct {
	*writer
	jsonCodecs sync.Pool // of *jsonScratch
}

// jsonScratch is a JSON codec and its row buffer, reused by the JSON
// methods of the writers.
type jsonScratch struct {
	codec *record.JSONCodec
	row   []byte
}

// appendKind is the AppendWriter's: Produce calls of +A batches.
var appendKind = writerKind{name: "append writer", appendOnly: true,
	call: func(call batchCall) *pb.WriteCall {
		return &pb.WriteCall{Call: &pb.WriteCall_Produce{Produce: &pb.ProduceRequest{TableId: call.tableID, Bucket: call.bucket,
			Acks: call.acks, Batch: call.batch, TimeoutMs: call.timeoutMs, Pipelined: call.pipelined, WriterToken: call.writerToken}}}
	}}

// NewAppendWriter returns a writer of the table's rows. It does no I/O and
// starts a sender goroutine per bucket; Close stops them.
func (t *Table) NewAppendWriter(opts AppendWriterOptions) (*AppendWriter, error) {
	if len(t.info.PrimaryKey) > 0 {
		return nil, fmt.Errorf("%w: %s.%s has a primary key", ErrNotLogTable, t.info.Database, t.info.Name)
	}
	if err := opts.validate(appendKind.name); err != nil {
		return nil, err
	}
	batchBytes := opts.withDefaults().BatchBytes
	core, err := startWriter(t, appendKind, opts, func(t *Table) router {
		if t.bucketKey != nil {
			return &keyRouter{key: t.bucketKey, buckets: t.info.Buckets}
		}
		return newStickyRouter(t.info.Buckets, rand.Int32N(t.info.Buckets), batchBytes)
	})
	if err != nil {
		return nil, err
	}
	w := &AppendWriter{writer: core}
	w.jsonCodecs.New = func() any { return &jsonScratch{codec: t.JSONCodec()} }
	return w, nil
}

// Append adds a row, encoded in the table's schema (Table.NewRowEncoder),
// and returns its future. The row is copied: the caller may reuse it. An
// invalid row is refused with record.ValidateRow's error and nothing is
// buffered; so is, in a table of the arrow log format, a TIMESTAMP of
// precision 7 to 9 outside the years 1677 to 2262
// (*arrowlog.TimestampRangeError). Append blocks while the writer's buffer
// is full, until ctx ends.
func (w *AppendWriter) Append(ctx context.Context, row []byte) (*AppendFuture, error) {
	if err := record.ValidateRow(w.t.schema, row); err != nil {
		return nil, err
	}
	return w.appendValid(ctx, row)
}

// AppendJSON adds a row given as a JSON object (record.JSONCodec rules). A
// malformed object or a bad value is refused with the codec's error, a
// *record.ColumnError when it is about a column, and nothing is buffered.
func (w *AppendWriter) AppendJSON(ctx context.Context, object []byte) (*AppendFuture, error) {
	js := w.jsonCodecs.Get().(*jsonScratch)
	defer w.jsonCodecs.Put(js)
	row, err := js.codec.AppendRow(js.row[:0], object)
	if err != nil {
		return nil, err
	}
	js.row = row
	return w.appendValid(ctx, row)
}

// appendValid adds a valid row; a writer of Arrow batches first checks
// that an Arrow payload holds it (arrowlog.RowChecker).
func (w *AppendWriter) appendValid(ctx context.Context, row []byte) (*AppendFuture, error) {
	if w.format != nil {
		if err := w.format.check.Check(row); err != nil {
			return nil, err
		}
	}
	tg, err := w.route(ctx, row)
	if err != nil {
		return nil, err
	}
	bucket, err := tg.router.route(row, record.RecordSize(len(row)))
	if err != nil {
		return nil, err
	}
	b, index, err := w.add(ctx, tg, bucket, record.AppendOnly, row)
	if err != nil {
		return nil, err
	}
	return &AppendFuture{b: b, index: index}, nil
}

// Flush sends every buffered row at once and waits until all rows appended
// before the call are acknowledged or have failed. It returns the first
// error a row met since the previous Flush (or ctx's error, leaving the rows
// to carry on).
func (w *AppendWriter) Flush(ctx context.Context) error { return w.flush(ctx) }

// Close refuses further rows, sends what is buffered and waits for it, then
// stops the writer's goroutines. If ctx ends first, the rows not yet
// acknowledged fail with ErrWriterClosed. It returns the first error since
// the last Flush, joined with ctx's error if it ended.
func (w *AppendWriter) Close(ctx context.Context) error { return w.close(ctx) }

// Buffered is the bytes of rows held: appended, not yet acknowledged or
// failed.
func (w *AppendWriter) Buffered() int64 { return w.budget.inUse() }

// Stats counts the rows acknowledged and failed so far.
func (w *AppendWriter) Stats() WriterStats { return w.stats() }
