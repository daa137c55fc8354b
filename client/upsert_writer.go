package client

import (
	"context"
	"sync"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// UpsertWriter writes to a primary-key table: upserts (+U records: the row
// becomes its key's row, or with PartialColumns, its columns are set in it)
// and deletes (-D records: the row of the key goes).
//
// It batches, retries and deduplicates exactly as an AppendWriter does (see
// there): rows go to the bucket of their bucket key, each bucket has one
// batch in flight, and a writer id with a sequence per batch makes a
// retried batch apply once. So the changes of a key apply in the order they
// were made. The leader answers a batch with the offsets of the changelog
// batch it appended for it, whose records (+I, -U, +U, -D) are what the
// batch changed.
//
// An UpsertWriter is safe for concurrent use.
type UpsertWriter struct {
	*writer
	rows       *upsertRows
	upsertJSON sync.Pool // of *jsonScratch
	deleteJSON sync.Pool // of *jsonScratch
}

// UpsertResult is where an upsert or delete was written.
type UpsertResult struct {
	Bucket int32
	// BaseOffset and LastOffset are the offsets of the changelog batch that
	// the row's batch made in the bucket; they cover every row of the
	// batch. -1 when the server did not say (AcksNone).
	BaseOffset, LastOffset int64
}

// UpsertFuture is the outcome of one Upsert or Delete, known once its
// batch is acknowledged or has failed.
type UpsertFuture struct {
	b *pendingBatch
}

// Done is closed when the outcome is known.
func (f *UpsertFuture) Done() <-chan struct{} { return f.b.done }

// Wait waits for the outcome, or for ctx (which leaves the row's batch to
// carry on).
func (f *UpsertFuture) Wait(ctx context.Context) (UpsertResult, error) {
	select {
	case <-f.b.done:
	case <-ctx.Done():
		return UpsertResult{}, ctx.Err()
	}
	if f.b.err != nil {
		return UpsertResult{Bucket: f.b.bucket}, f.b.err
	}
	res := UpsertResult{Bucket: f.b.bucket, BaseOffset: f.b.baseOffset, LastOffset: f.b.lastOffset}
	if res.BaseOffset < 0 {
		res.LastOffset = -1
	}
	return res, nil
}

// NewUpsertWriter returns a writer of the table's rows. It does no I/O and
// starts a sender goroutine per bucket; Close stops them. A log table is
// refused with ErrNotPrimaryKeyTable, PartialColumns naming no column with
// record.ErrUnknownColumn.
func (t *Table) NewUpsertWriter(opts UpsertWriterOptions) (*UpsertWriter, error) {
	if _, err := t.requireKeys(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	rows, err := newUpsertRows(t.schema, opts.PartialColumns)
	if err != nil {
		return nil, err
	}
	targets := rows.targets
	kind := writerKind{name: upsertWriterName,
		call: func(call batchCall) *pb.WriteCall {
			return &pb.WriteCall{Call: &pb.WriteCall_PutKv{PutKv: &pb.PutKvRequest{TableId: call.tableID, Bucket: call.bucket,
				Acks: call.acks, Batch: call.batch, TimeoutMs: call.timeoutMs, TargetColumns: targets, Pipelined: call.pipelined,
				WriterToken: call.writerToken}}}
		}}
	core, err := startWriter(t, kind, opts.common(), func(t *Table) router {
		return &keyRouter{key: t.bucketKey, buckets: t.info.Buckets}
	})
	if err != nil {
		return nil, err
	}
	w := &UpsertWriter{writer: core, rows: rows}
	w.upsertJSON.New = func() any { return &jsonScratch{codec: mustJSONCodec(rows.upsert)} }
	w.deleteJSON.New = func() any { return &jsonScratch{codec: mustJSONCodec(rows.del)} }
	return w, nil
}

// mustJSONCodec returns a codec of a schema derived from a validated one.
func mustJSONCodec(s record.Schema) *record.JSONCodec {
	c, err := record.NewJSONCodec(s)
	if err != nil {
		panic("client: JSON codec of a validated schema: " + err.Error())
	}
	return c
}

// Upsert writes a row, encoded in the table's schema (Table.NewRowEncoder),
// and returns its future. The row is copied. An invalid row is refused with
// record.ValidateRow's error and nothing is buffered; with PartialColumns
// the other columns must be null (else ErrNotTargetColumn), and may be even
// when NOT NULL. Upsert blocks while the writer's buffer is full, until ctx
// ends.
func (w *UpsertWriter) Upsert(ctx context.Context, row []byte) (*UpsertFuture, error) {
	if err := w.rows.checkUpsert(row); err != nil {
		return nil, err
	}
	return w.write(ctx, record.UpdateAfter, row)
}

// UpsertJSON writes a row given as a JSON object (record.JSONCodec rules;
// with PartialColumns, the object holds the key and some of those columns).
func (w *UpsertWriter) UpsertJSON(ctx context.Context, object []byte) (*UpsertFuture, error) {
	js := w.upsertJSON.Get().(*jsonScratch)
	defer w.upsertJSON.Put(js)
	row, err := js.codec.AppendRow(js.row[:0], object)
	if err != nil {
		return nil, err
	}
	js.row = row
	if err := w.rows.checkOutside(row); err != nil {
		return nil, err
	}
	return w.write(ctx, record.UpdateAfter, row)
}

// Delete deletes the row whose primary key row carries: a row of the
// table's schema with at least the key columns set (the others are
// ignored, and may be null even when NOT NULL). Deleting an absent key
// changes nothing.
func (w *UpsertWriter) Delete(ctx context.Context, row []byte) (*UpsertFuture, error) {
	if err := w.rows.checkDelete(row); err != nil {
		return nil, err
	}
	return w.write(ctx, record.Delete, row)
}

// DeleteJSON deletes the row of the key given as a JSON object with the
// key columns (others are allowed, and ignored).
func (w *UpsertWriter) DeleteJSON(ctx context.Context, object []byte) (*UpsertFuture, error) {
	js := w.deleteJSON.Get().(*jsonScratch)
	defer w.deleteJSON.Put(js)
	row, err := js.codec.AppendRow(js.row[:0], object)
	if err != nil {
		return nil, err
	}
	js.row = row
	return w.write(ctx, record.Delete, row)
}

// write buffers a checked row.
func (w *UpsertWriter) write(ctx context.Context, change record.ChangeType, row []byte) (*UpsertFuture, error) {
	tg, err := w.route(ctx, row)
	if err != nil {
		return nil, err
	}
	bucket, err := tg.router.route(row, 0)
	if err != nil {
		return nil, err
	}
	b, _, err := w.add(ctx, tg, bucket, change, row)
	if err != nil {
		return nil, err
	}
	return &UpsertFuture{b: b}, nil
}

// Flush sends every buffered row at once and waits until all rows written
// before the call are acknowledged or have failed. It returns the first
// error a row met since the previous Flush (or ctx's error, leaving the rows
// to carry on).
func (w *UpsertWriter) Flush(ctx context.Context) error { return w.flush(ctx) }

// Close refuses further rows, sends what is buffered and waits for it, then
// stops the writer's goroutines. If ctx ends first, the rows not yet
// acknowledged fail with ErrWriterClosed. It returns the first error since
// the last Flush, joined with ctx's error if it ended.
func (w *UpsertWriter) Close(ctx context.Context) error { return w.close(ctx) }

// Buffered is the bytes of rows held: written, not yet acknowledged or
// failed.
func (w *UpsertWriter) Buffered() int64 { return w.budget.inUse() }

// Stats counts the changes acknowledged and failed so far.
func (w *UpsertWriter) Stats() WriterStats { return w.stats() }
