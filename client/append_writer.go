package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// AppendWriter appends rows to a log table.
//
// Rows are batched per bucket: a batch is sent when it is full
// (BatchBytes), when its first row has waited Linger, or on Flush and Close.
// Each bucket has its own sender goroutine with at most one batch in flight:
// the next batch of a bucket leaves only once the previous one is
// acknowledged or has failed. That keeps rows in Append order within a
// bucket through retries without any reordering logic, at the price of one
// round trip per batch and bucket.
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
// next Flush, report the error); its bucket then continues with a fresh
// writer id, so later rows are still written.
//
// Memory is bounded by MaxBufferedBytes: Append blocks while the rows held
// would exceed it. An AppendWriter is safe for concurrent use; rows
// appended by one goroutine keep their order within each bucket.
type AppendWriter struct {
	t      *Table
	opts   AppendWriterOptions // defaults applied
	codec  *record.Codec       // nil without compression
	router router
	budget *byteBudget

	senders    []*bucketSender // by bucket
	buffers    sync.Pool       // of *batchBuffer
	jsonCodecs sync.Pool       // of *jsonScratch

	idSem    chan struct{} // held while allocating the shared writer id
	writerID int64         // shared writer id, -1 until allocated; under idSem

	mu      sync.RWMutex // Append holds it for reading; Close for writing
	closed  bool
	closing chan struct{}      // closed by Close
	stopped chan struct{}      // closed once every sender has returned
	abort   context.CancelFunc // ends the senders' calls
	wg      sync.WaitGroup

	errMu    sync.Mutex
	firstErr error // since the last Flush
}

// jsonScratch is a JSON codec and its row buffer, reused by AppendJSON.
type jsonScratch struct {
	codec *record.JSONCodec
	row   []byte
}

// NewAppendWriter returns a writer of the table's rows. It does no I/O and
// starts a sender goroutine per bucket; Close stops them.
func (t *Table) NewAppendWriter(opts AppendWriterOptions) (*AppendWriter, error) {
	if len(t.info.PrimaryKey) > 0 {
		return nil, fmt.Errorf("%w: %s.%s has a primary key", ErrNotLogTable, t.info.Database, t.info.Name)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	w := &AppendWriter{
		t:        t,
		opts:     opts.withDefaults(),
		idSem:    make(chan struct{}, 1),
		writerID: -1,
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	w.budget = newByteBudget(w.opts.MaxBufferedBytes)
	if w.opts.Compression != record.CompressionNone {
		codec, err := t.c.batchCodec()
		if err != nil {
			return nil, err
		}
		w.codec = codec
	}
	if t.bucketKey != nil {
		w.router = &keyRouter{key: t.bucketKey, buckets: t.info.Buckets}
	} else {
		w.router = newStickyRouter(t.info.Buckets, rand.Int32N(t.info.Buckets), w.opts.BatchBytes)
	}
	w.buffers.New = func() any { return &batchBuffer{} }
	w.jsonCodecs.New = func() any { return &jsonScratch{codec: t.JSONCodec()} }
	ctx, cancel := context.WithCancel(context.Background())
	w.abort = cancel
	w.senders = make([]*bucketSender, t.info.Buckets)
	for b := range w.senders {
		s := &bucketSender{w: w, bucket: int32(b), wakeCh: make(chan struct{}, 1), writerID: -1}
		w.senders[b] = s
		w.wg.Go(func() { s.run(ctx) })
	}
	return w, nil
}

// Append adds a row, encoded in the table's schema (Table.NewRowEncoder),
// and returns its future. The row is copied: the caller may reuse it. An
// invalid row is refused with record.ValidateRow's error and nothing is
// buffered. Append blocks while the writer's buffer is full, until ctx ends.
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

// appendValid adds a valid row.
func (w *AppendWriter) appendValid(ctx context.Context, row []byte) (*AppendFuture, error) {
	recordBytes := record.RecordSize(len(row))
	if record.HeaderSize+recordBytes > record.MaxBatchSize {
		return nil, fmt.Errorf("client: append: row of %d bytes exceeds the %d-byte batch limit", len(row), record.MaxBatchSize)
	}
	bucket, err := w.router.route(row, recordBytes)
	if err != nil {
		return nil, err
	}
	if err := w.budget.take(ctx, int64(recordBytes), w.closing, ErrWriterClosed); err != nil {
		return nil, err
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.budget.give(int64(recordBytes))
		return nil, ErrWriterClosed
	}
	return w.senders[bucket].add(row, recordBytes), nil
}

// Flush sends every buffered row at once and waits until all rows appended
// before the call are acknowledged or have failed. It returns the first
// error a row met since the previous Flush (or ctx's error, leaving the rows
// to carry on).
func (w *AppendWriter) Flush(ctx context.Context) error {
	var newest []*pendingBatch
	for _, s := range w.senders {
		if b := s.flush(); b != nil {
			newest = append(newest, b)
		}
	}
	// A bucket's batches complete in order: its newest one is the last.
	for _, b := range newest {
		select {
		case <-b.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return w.takeErr()
}

// Close refuses further rows, sends what is buffered and waits for it, then
// stops the writer's goroutines. If ctx ends first, the rows not yet
// acknowledged fail with ErrWriterClosed. It returns the first error since
// the last Flush, joined with ctx's error if it ended.
func (w *AppendWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	first := !w.closed
	if first {
		w.closed = true
		close(w.closing)
	}
	w.mu.Unlock()
	if first {
		for _, s := range w.senders {
			s.wake()
		}
		go func() {
			w.wg.Wait()
			close(w.stopped)
		}()
	}
	select {
	case <-w.stopped:
		w.abort()
		return w.takeErr()
	case <-ctx.Done():
		w.abort()
		<-w.stopped
		return errors.Join(fmt.Errorf("client: close writer: %w", ctx.Err()), w.takeErr())
	}
}

// Buffered is the bytes of rows held: appended, not yet acknowledged or
// failed.
func (w *AppendWriter) Buffered() int64 { return w.budget.inUse() }

// noteErr keeps the first error for Flush.
func (w *AppendWriter) noteErr(err error) {
	w.errMu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.errMu.Unlock()
}

func (w *AppendWriter) takeErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	err := w.firstErr
	w.firstErr = nil
	return err
}

// sharedWriterID returns the writer's id, allocating it on first use.
func (w *AppendWriter) sharedWriterID(ctx context.Context) (int64, error) {
	select {
	case w.idSem <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	defer func() { <-w.idSem }()
	if w.writerID >= 0 {
		return w.writerID, nil
	}
	id, err := w.t.c.allocateWriterID(ctx)
	if err != nil {
		return 0, err
	}
	w.writerID = id
	return id, nil
}

// allocateWriterID gets a new idempotent writer id from the metadata
// service. The request id makes a retried call return the same id.
func (c *Client) allocateWriterID(ctx context.Context) (int64, error) {
	req := &pb.AllocateWriterIdRequest{RequestId: newRequestID()}
	var resp *pb.AllocateWriterIdResponse
	err := c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.AllocateWriterId(ctx, req)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("client: allocate writer id: %w", err)
	}
	if resp.WriterId > math.MaxInt64 {
		return 0, fmt.Errorf("client: allocate writer id: id %d does not fit a batch header", resp.WriterId)
	}
	return int64(resp.WriterId), nil
}
