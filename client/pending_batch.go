package client

import (
	"context"
	"sync"
	"time"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
)

// AppendResult is where an appended row was written.
type AppendResult struct {
	Bucket int32
	// Offset is the row's offset in its bucket; -1 when the server did not
	// say (AcksNone).
	Offset int64
	// Timestamp is the batch's commit time, set by the leader.
	Timestamp time.Time
}

// AppendFuture is the outcome of one Append, known once its batch is
// acknowledged or has failed.
type AppendFuture struct {
	b     *pendingBatch
	index int
}

// Done is closed when the outcome is known.
func (f *AppendFuture) Done() <-chan struct{} { return f.b.done }

// Wait waits for the outcome, or for ctx (which leaves the row's batch to
// carry on).
func (f *AppendFuture) Wait(ctx context.Context) (AppendResult, error) {
	select {
	case <-f.b.done:
	case <-ctx.Done():
		return AppendResult{}, ctx.Err()
	}
	if f.b.err != nil {
		return AppendResult{}, f.b.err
	}
	res := AppendResult{Bucket: f.b.bucket, Offset: -1, Timestamp: time.UnixMilli(f.b.timestampMs)}
	if f.b.baseOffset >= 0 {
		res.Offset = f.b.baseOffset + int64(f.index)
	}
	return res, nil
}

// pendingBatch is the rows of one future batch of a bucket: open while rows
// are added, then sealed and queued, then built and sent (once built its
// bytes never change: retries resend them), then done.
type pendingBatch struct {
	bucket  int32
	created time.Time // first row appended
	buf     *batchBuffer
	size    int // as a batch: header and records
	count   int
	full    bool // sealed because the next row would not fit
	done    chan struct{}

	// Set before done is closed.
	baseOffset  int64
	lastOffset  int64
	timestampMs int64
	err         error
}

// bufferPool keeps a writer's free batch buffers with the capacity they
// grew to (their rows, their Arrow encoder's builders, payload and batch),
// up to maxBytes of rows, payload and batch. A sync.Pool lost them at every
// garbage collection, and a free list of a few buffers lost most of those
// a produce answer for many buckets frees at once: a writer spread over
// many buckets then grew nearly every batch's buffers anew, a third of its
// CPU zeroing and copying memory.
type bufferPool struct {
	mu       sync.Mutex
	free     []*batchBuffer
	bytes    int // the free buffers' sizes
	maxBytes int
}

// freeBufferShare is the share of a writer's buffer budget
// (MaxBufferedBytes) its free buffers may keep: all of it, the buffers of
// every batch a round of produce answers frees. A quarter left a writer
// over 72 buckets growing a third of its batches anew. A writer thus holds
// up to twice MaxBufferedBytes, half of it free buffers, idle or not.
const freeBufferShare = 1

func newBufferPool(maxBufferedBytes int64) bufferPool {
	return bufferPool{maxBytes: int(maxBufferedBytes / freeBufferShare)}
}

func (p *bufferPool) get() *batchBuffer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.bytes -= b.size()
		return b
	}
	return &batchBuffer{}
}

func (p *bufferPool) put(b *batchBuffer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := b.size(); p.bytes+n <= p.maxBytes {
		p.free = append(p.free, b)
		p.bytes += n
	}
}

// batchBuffer holds a pending batch's rows, and the builder that makes the
// batch of them. Buffers are reused from batch to batch.
type batchBuffer struct {
	rows    []byte
	ends    []int // row i is rows[ends[i-1]:ends[i]]
	changes []record.ChangeType
	builder *record.BatchBuilder
	// The Arrow encoder of a writer of a table in the arrow log format,
	// and the payload and batch it makes.
	arrow   *arrowlog.Encoder
	payload []byte
	batch   []byte
}

// size is the buffer's largest parts, what a free list of them holds.
func (b *batchBuffer) size() int { return cap(b.rows) + cap(b.payload) + cap(b.batch) }

func newPendingBatch(bucket int32, buf *batchBuffer) *pendingBatch {
	buf.rows = buf.rows[:0]
	buf.ends = buf.ends[:0]
	buf.changes = buf.changes[:0]
	return &pendingBatch{bucket: bucket, created: time.Now(), buf: buf, size: record.HeaderSize,
		done: make(chan struct{})}
}

// add copies a row into the batch and returns its index.
func (b *pendingBatch) add(change record.ChangeType, row []byte, recordBytes int) int {
	b.buf.changes = append(b.buf.changes, change)
	b.buf.rows = append(b.buf.rows, row...)
	b.buf.ends = append(b.buf.ends, len(b.buf.rows))
	b.size += recordBytes
	b.count++
	return b.count - 1
}

// recordBytes is what the batch holds of the writer's buffer budget.
func (b *pendingBatch) recordBytes() int64 { return int64(b.size - record.HeaderSize) }

// build makes the batch with the given header options: a batch of rows,
// or with f an Arrow batch of the rows of f's schema.
func (b *pendingBatch) build(opts record.BatchOptions, f *logFormat) (record.Batch, error) {
	if f != nil {
		return b.buildArrow(opts, f)
	}
	if b.buf.builder == nil {
		b.buf.builder = record.NewBatchBuilder(opts, 0)
	} else {
		b.buf.builder.Reset(opts, 0)
	}
	start := 0
	for i, end := range b.buf.ends {
		if err := b.buf.builder.Append(b.buf.changes[i], b.buf.rows[start:end]); err != nil {
			return nil, err
		}
		start = end
	}
	return b.buf.builder.Build()
}

// buildArrow makes an Arrow batch of the rows (all appends).
func (b *pendingBatch) buildArrow(opts record.BatchOptions, f *logFormat) (record.Batch, error) {
	buf := b.buf
	if buf.arrow == nil {
		enc, err := arrowlog.NewEncoder(f.schema, f.arrow)
		if err != nil {
			return nil, err
		}
		buf.arrow = enc
	}
	buf.arrow.Reset()
	start := 0
	for _, end := range buf.ends {
		if err := buf.arrow.Append(buf.rows[start:end]); err != nil {
			return nil, err
		}
		start = end
	}
	var err error
	if buf.payload, err = buf.arrow.Finish(buf.payload[:0]); err != nil {
		return nil, err
	}
	opts.Format, opts.Compression, opts.Codec = record.PayloadArrow, f.arrow.Compression, nil
	batch, err := record.BuildBatch(opts, int32(len(buf.ends)), buf.payload, buf.batch[:0])
	if err != nil {
		return nil, err
	}
	buf.batch = batch
	return batch, nil
}
