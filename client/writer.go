package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// writer is the machinery AppendWriter and UpsertWriter share: a sender
// goroutine per bucket that batches rows, sends one batch at a time with
// a writer id and a sequence per batch, and retries retriable errors; a
// byte budget bounding the rows held; Flush and Close. What differs between
// the two is in writerKind.
type writer struct {
	t      *Table
	kind   writerKind
	opts   AppendWriterOptions // defaults applied
	codec  *record.Codec       // nil without compression
	format *logFormat          // nil: row batches
	budget *byteBudget

	// main is where rows go in a table that is not partitioned; parts,
	// in a partitioned one, the partitions rows went to so far, by id,
	// each with its senders, started on the partition's first row.
	main      *target
	newRouter func(t *Table) router
	partMu    sync.Mutex
	parts     map[uint64]*target
	retired   []*target       // of dropped partitions: flushed and closed still
	runCtx    context.Context // the senders'
	buffers   bufferPool      // of the batches' buffers
	names     sync.Pool       // of *[]byte: partition names being built

	idSem    chan struct{} // held while allocating the shared writer id
	writerID int64         // shared writer id, -1 until allocated; under idSem

	mu      sync.RWMutex // add holds it for reading; Close for writing
	closed  bool
	closing chan struct{}      // closed by Close
	stopped chan struct{}      // closed once every sender has returned
	abort   context.CancelFunc // ends the senders' calls
	wg      sync.WaitGroup

	errMu    sync.Mutex
	firstErr error // since the last Flush

	acked, failed atomic.Int64 // rows, by the outcome of their batch
	unknown       atomic.Int64 // of the failed rows, those that may be written
	batches       atomic.Int64 // acknowledged batches
}

// WriterStats counts a writer's rows by outcome so far.
type WriterStats struct {
	// Acknowledged rows: their batch was answered with the writer's acks
	// (with acks=0, sent).
	Acknowledged int64 `json:"acknowledged"`
	// Failed rows: their batch failed for good, its outcome maybe unknown.
	Failed int64 `json:"failed"`
	// Unknown rows, of the Failed ones: their batch was sent and not
	// refused, and not acknowledged either (the node stopped, the
	// connection was lost, the delivery timeout passed with a call
	// unanswered): they may or may not be written. Failed - Unknown rows
	// are not written: refused by the server, or never sent.
	Unknown int64 `json:"unknown"`
	// Batches acknowledged: Acknowledged / Batches is the rows a batch
	// carried on average, which the linger and the load decide.
	Batches int64 `json:"batches"`
}

func (w *writer) stats() WriterStats {
	return WriterStats{Acknowledged: w.acked.Load(), Failed: w.failed.Load(), Unknown: w.unknown.Load(), Batches: w.batches.Load()}
}

// writerKind is what a kind of writer sends and how.
type writerKind struct {
	// name is the writer in messages: "append writer".
	name string
	// appendOnly: batches of +A records, acknowledged with one offset per
	// record. Otherwise a batch's answer covers the changelog it caused.
	appendOnly bool
	// call is the write call carrying a built batch of a bucket.
	call func(call batchCall) *pb.WriteCall
}

// batchCall is one attempt at sending a batch.
type batchCall struct {
	tableID   uint64
	bucket    int32
	acks      int32
	batch     []byte
	timeoutMs int32
	pipelined bool
	// writerToken binds the batch's writer id to this client's principal
	// (empty on a cluster without authentication).
	writerToken []byte
}

// target is one set of buckets rows go to: the table's, or a partition's.
type target struct {
	t       *Table // the table's handle, or the partition's
	senders []*bucketSender
	router  router
}

// startWriter starts a writer of the table's rows: a sender goroutine per
// bucket (of a partitioned table, per bucket of each partition written
// to), which close stops. newRouter gives a set of buckets its router.
// opts must be valid.
func startWriter(t *Table, kind writerKind, opts AppendWriterOptions, newRouter func(t *Table) router) (*writer, error) {
	w := &writer{
		t:        t,
		kind:     kind,
		opts:     opts.withDefaults(),
		idSem:    make(chan struct{}, 1),
		writerID: -1,
		closing:  make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	if limit := t.maxBatchBytes; limit > 0 && w.opts.BatchBytes > limit {
		// The table's segments are smaller than the batches asked for
		// (log.segment.bytes), and no batch is larger than a segment.
		w.opts.BatchBytes = limit
	}
	w.budget = newByteBudget(w.opts.MaxBufferedBytes)
	w.buffers = newBufferPool(w.opts.MaxBufferedBytes)
	if w.opts.Compression != record.CompressionNone {
		codec, err := t.c.batchCodec()
		if err != nil {
			return nil, err
		}
		w.codec = codec
	}
	if kind.appendOnly {
		f, err := t.logFormat()
		if err != nil {
			return nil, err
		}
		w.format = f
	}
	w.newRouter = newRouter
	w.names.New = func() any { return new([]byte) }
	w.runCtx, w.abort = context.WithCancel(context.Background())
	if t.parts != nil { // the partitioned table's handle: rows go to their partitions
		w.parts = map[uint64]*target{}
	} else { // a table's, or one partition's
		w.main = w.startTarget(t)
	}
	return w, nil
}

// startTarget starts the senders of the buckets of t.
func (w *writer) startTarget(t *Table) *target {
	tg := &target{t: t, senders: make([]*bucketSender, t.info.Buckets), router: w.newRouter(t)}
	for b := range tg.senders {
		s := newBucketSender(w, t, int32(b))
		tg.senders[b] = s
		w.wg.Go(func() { s.run(w.runCtx) })
	}
	return tg
}

// route returns the buckets a valid row goes to: the table's, or those
// of the row's partition, which a partitioned table creates when it does
// not exist and the table creates partitions on write.
func (w *writer) route(ctx context.Context, row []byte) (*target, error) {
	if w.main != nil && w.t.part == nil {
		return w.main, nil
	}
	scratch := w.names.Get().(*[]byte)
	defer w.names.Put(scratch)
	if w.main != nil {
		// A partition's writer takes the rows of that partition only.
		name, err := partition.AppendName(w.t.spec, (*scratch)[:0], record.NewRowView(w.t.schema, row))
		if err != nil {
			return nil, pkgerr.Errorf("client", "%s: %w", w.t.qualifiedName(), err)
		}
		*scratch = name
		if string(name) != w.t.part.Name {
			return nil, pkgerr.Errorf("client", "a row of partition %s to the writer of %s: write it with the table's writer", name, w.t.qualifiedName())
		}
		return w.main, nil
	}
	pt, err := w.t.partitionForRow(ctx, row, true, scratch)
	if err != nil {
		return nil, err
	}
	w.partMu.Lock()
	defer w.partMu.Unlock()
	if tg := w.parts[pt.info.ID]; tg != nil {
		return tg, nil
	}
	w.mu.RLock() // no sender starts once Close has begun
	defer w.mu.RUnlock()
	if w.closed {
		return nil, ErrWriterClosed
	}
	tg := w.startTarget(pt)
	w.parts[pt.info.ID] = tg
	return tg, nil
}

// forgetPartition stops routing rows to a dropped partition's handle: the
// next row of that partition loads it again (a new partition of the same
// values, if one was created). The senders of the old one stay until
// Close, failing what they hold.
func (w *writer) forgetPartition(pt *Table) {
	w.t.forgetPartition(pt)
	w.partMu.Lock()
	if tg := w.parts[pt.info.ID]; tg != nil && tg.t == pt {
		delete(w.parts, pt.info.ID)
		w.retired = append(w.retired, tg)
	}
	w.partMu.Unlock()
}

// allSenders returns every sender started so far.
func (w *writer) allSenders() []*bucketSender {
	if w.main != nil {
		return w.main.senders
	}
	w.partMu.Lock()
	defer w.partMu.Unlock()
	var out []*bucketSender
	for _, tg := range w.parts {
		out = append(out, tg.senders...)
	}
	for _, tg := range w.retired {
		out = append(out, tg.senders...)
	}
	return out
}

// add buffers a valid row with its change type for a bucket of tg,
// blocking while the buffer is full, and returns the batch it went into
// and its index.
func (w *writer) add(ctx context.Context, tg *target, bucket int32, change record.ChangeType, row []byte) (*pendingBatch, int, error) {
	recordBytes := record.RecordSize(len(row))
	if limit := w.t.maxBatchBytes; limit > 0 && record.HeaderSize+recordBytes > limit {
		return nil, 0, fmt.Errorf("%w: a row of %d bytes does not fit in the largest batch the cluster takes, %d bytes "+
			"(floe serve --max-batch-bytes)", ErrRowTooLarge, len(row), limit)
	}
	if record.HeaderSize+recordBytes > record.MaxBatchSize {
		return nil, 0, fmt.Errorf("%w: a row of %d bytes exceeds the %d-byte batch limit", ErrRowTooLarge,
			len(row), record.MaxBatchSize)
	}
	if err := w.budget.take(ctx, int64(recordBytes), w.closing, ErrWriterClosed); err != nil {
		return nil, 0, err
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.budget.give(int64(recordBytes))
		return nil, 0, ErrWriterClosed
	}
	b, index := tg.senders[bucket].add(change, row, recordBytes)
	return b, index, nil
}

// flush sends every buffered row at once and waits until all rows added
// before the call are acknowledged or have failed. It returns the first
// error a row met since the previous flush (or ctx's error, leaving the
// rows to carry on).
func (w *writer) flush(ctx context.Context) error {
	var newest []*pendingBatch
	for _, s := range w.allSenders() {
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

// close refuses further rows, sends what is buffered and waits for it, then
// stops the senders. If ctx ends first, the rows not yet acknowledged fail
// with ErrWriterClosed. It returns the first error since the last flush,
// joined with ctx's error if it ended.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	first := !w.closed
	if first {
		w.closed = true
		close(w.closing)
	}
	w.mu.Unlock()
	if first {
		for _, s := range w.allSenders() {
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
		return errors.Join(pkgerr.Errorf("client", "close %s: %w", w.kind.name, ctx.Err()), w.takeErr())
	}
}

// noteErr keeps the first error for flush.
func (w *writer) noteErr(err error) {
	w.errMu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.errMu.Unlock()
}

func (w *writer) takeErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	err := w.firstErr
	w.firstErr = nil
	return err
}

// sharedWriterID returns the writer's id, allocating it on first use.
func (w *writer) sharedWriterID(ctx context.Context) (int64, error) {
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
		return 0, pkgerr.Errorf("client", "allocate writer id: %w", err)
	}
	if resp.WriterId > math.MaxInt64 {
		return 0, pkgerr.Errorf("client", "allocate writer id: id %d does not fit a batch header", resp.WriterId)
	}
	if len(resp.WriterToken) > 0 {
		c.writerTokens.Store(int64(resp.WriterId), resp.WriterToken)
	}
	return int64(resp.WriterId), nil
}

// writerToken returns the token of batch's writer id; nil without one.
func (c *Client) writerToken(batch []byte) []byte {
	if len(batch) < record.HeaderSize {
		return nil
	}
	id := record.Batch(batch).WriterID()
	if id == record.NoWriterID {
		return nil
	}
	if t, ok := c.writerTokens.Load(id); ok {
		return t.([]byte)
	}
	return nil
}
