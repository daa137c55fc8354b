package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// bucketSender batches one bucket's rows and sends its batches, one at a
// time, from its own goroutine.
type bucketSender struct {
	w      *writer
	bucket int32
	wakeCh chan struct{} // capacity 1: "something changed"

	mu     sync.Mutex
	open   *pendingBatch   // taking rows; nil when none
	queue  []*pendingBatch // sealed, oldest first
	newest *pendingBatch   // the last batch taken off the queue

	// Owned by the sender goroutine.
	writerID int64 // -1: allocate one before the next batch
	freshID  bool  // the next writer id must be a new one, not the writer's shared id
	nextSeq  int32
}

// add puts a row in the open batch, sealing batches as they fill, and
// returns the batch and the row's index in it.
func (s *bucketSender) add(change record.ChangeType, row []byte, recordBytes int) (*pendingBatch, int) {
	batchBytes := s.w.opts.BatchBytes
	s.mu.Lock()
	wake := false
	if s.open != nil && s.open.size+recordBytes > batchBytes {
		s.sealLocked()
		wake = true
	}
	if s.open == nil {
		s.open = newPendingBatch(s.bucket, s.w.buffers.Get().(*batchBuffer))
		wake = true // arm the linger timer
	}
	b := s.open
	index := b.add(change, row, recordBytes)
	if b.size+record.RecordSize(0) > batchBytes {
		s.sealLocked()
	}
	s.mu.Unlock()
	if wake {
		s.wake()
	}
	return b, index
}

func (s *bucketSender) sealLocked() {
	s.queue = append(s.queue, s.open)
	s.open = nil
}

// flush seals the open batch and returns the newest batch of the bucket,
// nil when it has none.
func (s *bucketSender) flush() *pendingBatch {
	s.mu.Lock()
	if s.open != nil {
		s.sealLocked()
	}
	newest := s.newest
	if n := len(s.queue); n > 0 {
		newest = s.queue[n-1]
	}
	s.mu.Unlock()
	s.wake()
	return newest
}

func (s *bucketSender) wake() {
	select {
	case s.wakeCh <- struct{}{}:
	default:
	}
}

// run sends batches until the writer closes and nothing is left. ctx ends
// when Close gives up: the remaining batches then fail.
func (s *bucketSender) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		b, lingerLeft, stop := s.next()
		if b != nil {
			s.send(ctx, b)
			continue
		}
		if stop {
			return
		}
		var lingerC <-chan time.Time
		if lingerLeft > 0 {
			timer.Reset(lingerLeft)
			lingerC = timer.C
		}
		select {
		case <-s.wakeCh:
		case <-lingerC:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

// next returns the batch to send, or how long the open batch may still
// linger (0: no open batch), or stop once the writer is closing and the
// bucket has nothing left.
func (s *bucketSender) next() (b *pendingBatch, lingerLeft time.Duration, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	closing := isClosed(s.w.closing)
	if len(s.queue) == 0 && s.open != nil {
		left := s.w.opts.Linger - time.Since(s.open.created)
		if !closing && left > 0 {
			return nil, left, false
		}
		s.sealLocked()
	}
	if len(s.queue) > 0 {
		b = s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.newest = b
		return b, 0, false
	}
	return nil, 0, closing
}

// send delivers one batch and completes its futures.
func (s *bucketSender) send(ctx context.Context, b *pendingBatch) {
	dctx, cancel := context.WithDeadline(ctx, b.created.Add(s.w.opts.DeliveryTimeout))
	defer cancel()
	resp, sent, err := s.deliver(dctx, b)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: batch of %s for %s bucket %d not acknowledged: %v", ErrWriterClosed, rowCount(b.count),
				s.w.t.qualifiedName(), s.bucket, err)
		}
		if sent {
			// The sequence is spent and the batch's fate unknown: the
			// bucket carries on under a new writer id, whose sequences
			// cannot clash with anything written before.
			s.writerID = -1
			s.freshID = true
		}
		s.w.opts.Logger.Warn("batch failed", "table", s.w.t.info.Name, "bucket", s.bucket, "rows", b.count, "error", err)
		s.w.noteErr(err)
		s.w.failed.Add(int64(b.count))
		b.err = err
	} else {
		s.w.acked.Add(int64(b.count))
		b.baseOffset = resp.BaseOffset
		b.timestampMs = resp.TimestampMs
		b.lastOffset = resp.LastOffset
		if s.w.kind.appendOnly && s.w.opts.Acks != AcksNone && resp.LastOffset-resp.BaseOffset != int64(b.count-1) {
			s.w.opts.Logger.Warn("produce answer does not cover the batch", "bucket", s.bucket,
				"base_offset", resp.BaseOffset, "last_offset", resp.LastOffset, "rows", b.count)
		}
	}
	buf := b.buf
	b.buf = nil
	close(b.done)
	s.w.budget.give(b.recordBytes())
	s.w.buffers.Put(buf)
}

// deliver builds the batch (the writer id and sequence are fixed from then
// on) and produces it, retrying retriable errors with fresh metadata until
// ctx ends. sent reports whether the batch got a sequence number.
func (s *bucketSender) deliver(ctx context.Context, b *pendingBatch) (resp *pb.ProduceResponse, sent bool, err error) {
	if s.writerID < 0 {
		var id int64
		if s.freshID {
			id, err = s.w.t.c.allocateWriterID(ctx)
		} else {
			id, err = s.w.sharedWriterID(ctx)
		}
		if err != nil {
			return nil, false, s.timeoutError(ctx, b, 0, err)
		}
		s.writerID, s.freshID, s.nextSeq = id, false, 0
	}
	batch, err := b.build(record.BatchOptions{
		SchemaID: s.w.t.schemaID, Format: record.PayloadRows, Compression: s.w.opts.Compression,
		Codec: s.w.codec, AppendOnly: s.w.kind.appendOnly, HasWriter: true, WriterID: s.writerID, Sequence: s.nextSeq,
	})
	if err != nil {
		return nil, false, fmt.Errorf("client: build batch for bucket %d: %w", s.bucket, err)
	}
	if s.nextSeq == math.MaxInt32 {
		s.nextSeq = 0
	} else {
		s.nextSeq++
	}
	call := batchCall{tableID: s.w.t.info.ID, bucket: s.bucket, acks: s.w.opts.Acks.wire(), batch: batch}
	bo := newRetryBackoff()
	for attempt := 1; ; attempt++ {
		resp, version, err := s.sendOnce(ctx, call)
		if err == nil {
			return resp, true, nil
		}
		// A call cut short by RequestTimeout has an unknown outcome, which
		// the idempotent retry settles.
		timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if !retriable(err) && !timedOut {
			return nil, true, fmt.Errorf("client: %s: %s bucket %d: %w", s.w.kind.name, s.w.t.qualifiedName(), s.bucket, err)
		}
		if ctx.Err() != nil {
			return nil, true, s.timeoutError(ctx, b, attempt, err)
		}
		s.w.opts.Logger.Debug("batch failed, retrying", "bucket", s.bucket, "attempt", attempt, "error", err)
		_ = s.w.t.refreshAfter(ctx, version) // a failed refresh shows up as the next attempt's error
		if !bo.Wait(ctx) {
			return nil, true, s.timeoutError(ctx, b, attempt, err)
		}
	}
}

// sendOnce sends the batch to the bucket's leader of the moment.
func (s *bucketSender) sendOnce(ctx context.Context, call batchCall) (*pb.ProduceResponse, uint64, error) {
	addr, version, err := s.w.t.leader(s.bucket)
	if err != nil {
		return nil, version, err
	}
	timeout := s.w.opts.RequestTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	call.timeoutMs = int32(max(timeout.Milliseconds(), 1))
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.w.kind.send(rctx, s.w.t.tablet(addr), call)
	return resp, version, err
}

// timeoutError describes a batch given up on when ctx ended.
func (s *bucketSender) timeoutError(ctx context.Context, b *pendingBatch, attempts int, last error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s bucket %d, batch of %s, %d attempts in %v: %w", ErrDeliveryTimeout, s.w.t.qualifiedName(), s.bucket,
			rowCount(b.count), attempts, time.Since(b.created).Round(time.Millisecond), last)
	}
	return last
}

// rowCount is "1 row" or "n rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
