package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// bucketSender batches one bucket's rows and sends its batches from its
// own goroutine, up to MaxInFlight at once, on the write stream to the
// bucket's leader. The rules that keep a writer's batches in order and
// each written once (docs/replication.md, Writers):
//
//   - Every batch gets the next sequence of the sender's writer id when it
//     joins the flights, and keeps it, and its bytes, on every resend.
//   - A batch is sent pipelined when an earlier batch of its writer id in
//     the bucket is not acknowledged; a bucket with no history of the
//     writer refuses it, since the earlier one may land after it.
//   - The first batch of a writer id goes alone: until one is
//     acknowledged, the bucket may not know the writer.
//   - After a retriable failure the sender recovers: it waits until no
//     call is out, then resends the oldest unanswered batch alone until
//     one succeeds, and pipelines again.
//   - OUT_OF_ORDER_SEQUENCE for a batch that was sent pipelined is
//     retriable: its predecessor had not been decided then. For the oldest
//     unanswered batch after one of its writer id failed, it proves the
//     batch was not written (the failed one was not either, or the batch
//     would have been its successor): it and the batches after it get a
//     new writer id and are sent again. For a batch sent with every
//     predecessor acknowledged, the bucket lost the writer's history: the
//     batch fails with it, and the batches after it (not written either)
//     get a new writer id.
//   - Batches complete in sequence order, so Flush waits for the newest.
type bucketSender struct {
	w      *writer
	bucket int32
	wakeCh chan struct{} // capacity 1: "something changed"

	mu     sync.Mutex
	open   *pendingBatch   // taking rows; nil when none
	queue  []*pendingBatch // sealed, oldest first
	newest *pendingBatch   // the last batch taken off the queue

	resMu   sync.Mutex
	results []callResult // answers not yet handled

	// Owned by the sender goroutine.
	writerID   int64 // -1: allocate one before the next batch is sequenced
	freshID    bool  // the next writer id must be a new one, not the writer's shared id
	nextSeq    int32
	ackedOnID  bool      // a batch under writerID was acknowledged
	taintedID  bool      // a batch under writerID failed, written or not
	flights    []*flight // taken off the queue and not yet completed, oldest first
	calls      uint64    // calls made; each flight's call out carries its number
	recovering bool      // resend the oldest unanswered batch alone until one succeeds
	retryAt    time.Time // no call before it (backoff)
	bo         backoff.Backoff
	boArmed    bool
}

// callGrace is how long past its timeout a call's answer is waited for.
const callGrace = 500 * time.Millisecond

// flight is one batch on its way: sequenced (or waiting for a writer id),
// sent perhaps several times, answered.
type flight struct {
	b         *pendingBatch
	writerID  int64 // -1: not sequenced yet
	seq       int32
	batch     []byte
	deadline  time.Time // DeliveryTimeout
	attempts  int
	call      uint64 // the call out for it, 0 when none
	callEnds  time.Time
	pipelined bool // the call out (or the last one) was sent pipelined
	stream    *writeStream
	version   uint64
	acked     bool
	resp      *pb.ProduceResponse
	err       error // failed for good
	lastErr   error // what the last call failed with
}

func (f *flight) resolved() bool { return f.acked || f.err != nil }

// callResult is the answer to one call.
type callResult struct {
	f    *flight
	call uint64
	out  writeOutcome
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

// post hands a call's answer to the sender goroutine. It never blocks: the
// write streams call it from their receivers.
func (s *bucketSender) post(r callResult) {
	s.resMu.Lock()
	s.results = append(s.results, r)
	s.resMu.Unlock()
	s.wake()
}

// run sends batches until the writer closes and nothing is left. ctx ends
// when Close gives up: the remaining batches then fail.
func (s *bucketSender) run(ctx context.Context) {
	s.bo = newRetryBackoff()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			s.abandon(ctx)
			return
		}
		now := time.Now()
		s.handleResults(ctx, now)
		s.expire(now)
		lingerLeft, stop := s.admit(now)
		s.sequence(ctx)
		s.sendReady(ctx, now)
		if s.complete() > 0 {
			continue // room for more batches
		}
		if stop && len(s.flights) == 0 {
			return
		}
		wait := s.nextWake(now, lingerLeft)
		var timerC <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			timerC = timer.C
		}
		select {
		case <-s.wakeCh:
		case <-timerC:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

// admit moves sealed batches into the flights while there is room, and
// seals the open batch once its linger is over (with the default linger,
// at once when nothing is in flight). It returns how long the
// open batch may still linger (0: none waits), and stop once the writer is
// closing and the bucket holds no rows outside the flights.
func (s *bucketSender) admit(now time.Time) (lingerLeft time.Duration, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	closing := isClosed(s.w.closing)
	for len(s.flights) < s.w.opts.MaxInFlight {
		if len(s.queue) == 0 && s.open != nil {
			left := s.w.opts.Linger - now.Sub(s.open.created)
			idle := s.w.opts.lingerIdle && len(s.flights) == 0
			if !closing && !idle && left > 0 {
				return left, false
			}
			s.sealLocked()
		}
		if len(s.queue) == 0 {
			break
		}
		b := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.newest = b
		s.flights = append(s.flights, &flight{b: b, writerID: -1, deadline: b.created.Add(s.w.opts.DeliveryTimeout)})
	}
	return 0, closing && len(s.queue) == 0 && s.open == nil
}

// sequence gives the flights that have none a writer id and the next
// sequences, in order, and builds their batches.
func (s *bucketSender) sequence(ctx context.Context) {
	for _, f := range s.flights {
		if f.writerID >= 0 || f.resolved() {
			continue
		}
		if s.writerID < 0 {
			if !s.allocateWriterID(ctx, f) {
				return
			}
		}
		batch, err := f.b.build(record.BatchOptions{
			SchemaID: s.w.t.schemaID, Format: record.PayloadRows, Compression: s.w.opts.Compression,
			Codec: s.w.codec, AppendOnly: s.w.kind.appendOnly, HasWriter: true, WriterID: s.writerID, Sequence: s.nextSeq,
		})
		if err != nil {
			f.err = fmt.Errorf("client: build batch for bucket %d: %w", s.bucket, err)
			continue
		}
		f.writerID, f.seq, f.batch = s.writerID, s.nextSeq, batch
		if s.nextSeq == math.MaxInt32 {
			s.nextSeq = 0
		} else {
			s.nextSeq++
		}
	}
}

// allocateWriterID gets the sender its writer id (the writer's shared one,
// or a new one after a failure). On failure it fails f when the error is
// final or f's time is up, and backs off otherwise; false means no id.
func (s *bucketSender) allocateWriterID(ctx context.Context, f *flight) bool {
	actx, cancel := context.WithDeadline(ctx, f.deadline)
	defer cancel()
	var id int64
	var err error
	if s.freshID {
		id, err = s.w.t.c.allocateWriterID(actx)
	} else {
		id, err = s.w.sharedWriterID(actx)
	}
	if err != nil {
		if ctx.Err() == nil && (!retriable(err) || !time.Now().Before(f.deadline)) {
			f.err = s.timeoutError(f, err)
		} else {
			s.backOff(time.Now())
		}
		return false
	}
	s.writerID, s.freshID, s.nextSeq, s.ackedOnID, s.taintedID = id, false, 0, false, false
	return true
}

// sendReady sends the flights that may go now: in order, up to the ones
// the rules let through (the first of a writer id alone; in recovery the
// oldest unanswered alone, once no call is out).
func (s *bucketSender) sendReady(ctx context.Context, now time.Time) {
	if now.Before(s.retryAt) {
		return
	}
	out := 0
	for _, f := range s.flights {
		if f.call != 0 {
			out++
		}
	}
	for i, f := range s.flights {
		if f.resolved() || f.call != 0 {
			continue
		}
		if f.writerID < 0 {
			return // waiting for a writer id; the later ones too
		}
		// In recovery, or before the writer id's first acknowledgement,
		// one call at a time (every earlier flight is resolved here: one
		// still unanswered would have been sent or be out).
		if (s.recovering || !s.ackedOnID) && out > 0 {
			return
		}
		s.startCall(ctx, f, s.pipelined(i))
		out++
		if s.recovering {
			return
		}
	}
}

// pipelined says whether flight i has an earlier batch of its writer id
// that is not acknowledged.
func (s *bucketSender) pipelined(i int) bool {
	f := s.flights[i]
	if f.writerID == s.writerID && s.taintedID {
		return true
	}
	for _, e := range s.flights[:i] {
		if e.writerID == f.writerID && !e.acked {
			return true
		}
	}
	return false
}

// startCall sends f to the bucket's leader of the moment.
func (s *bucketSender) startCall(ctx context.Context, f *flight, pipelined bool) {
	s.calls++
	f.call, f.pipelined, f.attempts = s.calls, pipelined, f.attempts+1
	addr, version, err := s.w.t.leader(s.bucket)
	f.version = version
	if err != nil {
		s.post(callResult{f: f, call: f.call, out: writeOutcome{err: err}})
		return
	}
	st, err := s.w.t.c.writes.stream(ctx, addr)
	if err != nil {
		s.post(callResult{f: f, call: f.call, out: writeOutcome{err: err}})
		return
	}
	timeout := min(s.w.opts.RequestTimeout, time.Until(f.deadline))
	// The server answers within timeout; the grace lets its answer (a
	// timeout of its own, say) arrive before the call is given up on.
	f.stream, f.callEnds = st, time.Now().Add(timeout+callGrace)
	call := s.w.kind.call(batchCall{tableID: s.w.t.info.ID, bucket: s.bucket, acks: s.w.opts.Acks.wire(), batch: f.batch,
		timeoutMs: int32(max(timeout.Milliseconds(), 1)), pipelined: pipelined})
	id := f.call
	st.start(call, func(o writeOutcome) { s.post(callResult{f: f, call: id, out: o}) })
}

// handleResults applies the answers that came in.
func (s *bucketSender) handleResults(ctx context.Context, now time.Time) {
	s.resMu.Lock()
	results := s.results
	s.results = nil
	s.resMu.Unlock()
	for _, r := range results {
		f := r.f
		if f.call != r.call || f.resolved() {
			continue // the answer to a call given up on
		}
		f.call = 0
		if r.out.err != nil {
			s.callFailed(ctx, f, r.out.err, now)
			continue
		}
		if s.recovering && s.oldestUnanswered() == f {
			// What recovery resent got through: the others may follow.
			s.recovering = false
			s.boArmed = false
		}
		f.acked, f.resp = true, r.out.resp
		if f.writerID == s.writerID {
			s.ackedOnID = true
		}
	}
}

// oldestUnanswered is the first flight neither acknowledged nor failed.
func (s *bucketSender) oldestUnanswered() *flight {
	for _, f := range s.flights {
		if !f.resolved() {
			return f
		}
	}
	return nil
}

// callFailed decides what a failed call means for its batch.
func (s *bucketSender) callFailed(ctx context.Context, f *flight, err error, now time.Time) {
	if ctx.Err() != nil {
		return // abandon fails it
	}
	f.lastErr = err
	if errors.Is(err, transport.ErrOutOfOrderSequence) {
		s.outOfOrder(f, err, now)
		return
	}
	timedOut := errors.Is(err, context.DeadlineExceeded)
	if !retriable(err) && !timedOut {
		s.fail(f, fmt.Errorf("client: %s: %s bucket %d: %w", s.w.kind.name, s.w.t.qualifiedName(), s.bucket, err))
		return
	}
	if !now.Before(f.deadline) {
		s.fail(f, s.timeoutError(f, err))
		return
	}
	s.w.opts.Logger.Debug("batch failed, retrying", "bucket", s.bucket, "attempt", f.attempts, "error", err)
	_ = s.w.t.refreshAfter(ctx, f.version) // a failed refresh shows up as the next attempt's error
	s.recovering = true
	s.backOff(now)
}

// outOfOrder applies the OUT_OF_ORDER_SEQUENCE rules (see bucketSender).
func (s *bucketSender) outOfOrder(f *flight, err error, now time.Time) {
	oldest := s.oldestUnanswered() == f
	predecessorFailed := f.writerID == s.writerID && s.taintedID
	for _, e := range s.flights {
		if e == f {
			break
		}
		if e.writerID == f.writerID && e.err != nil {
			predecessorFailed = true
		}
	}
	switch {
	case oldest && predecessorFailed:
		// Not written: it and what follows start over under a new id.
		s.resequenceFrom(f)
	case f.pipelined || !oldest:
		// Its predecessor was undecided when it was sent, or still is.
		if !now.Before(f.deadline) {
			s.fail(f, s.timeoutError(f, err))
			return
		}
		s.recovering = true
		s.backOff(now)
	default:
		s.fail(f, fmt.Errorf("client: %s: %s bucket %d: %w", s.w.kind.name, s.w.t.qualifiedName(), s.bucket, err))
		if next := s.after(f); next != nil {
			s.resequenceFrom(next)
		}
	}
}

// after is the flight after f, nil when f is the last.
func (s *bucketSender) after(f *flight) *flight {
	for i, e := range s.flights {
		if e == f && i+1 < len(s.flights) {
			return s.flights[i+1]
		}
	}
	return nil
}

// resequenceFrom gives flight f and every later unanswered one a new
// writer id and sequences, none of them written: they are sent again.
func (s *bucketSender) resequenceFrom(f *flight) {
	from := false
	for _, e := range s.flights {
		if e == f {
			from = true
		}
		if from && !e.resolved() {
			e.writerID, e.call = -1, 0
		}
	}
	s.writerID, s.freshID = -1, true
	s.recovering = false
}

// fail fails f for good; its outcome may be unknown.
func (s *bucketSender) fail(f *flight, err error) {
	f.err, f.call = err, 0
	if f.writerID == s.writerID && f.attempts > 0 {
		s.taintedID = true
	}
}

// expire gives up on calls out past their time (the stream they went on
// may hang: it is broken, so the next call opens another) and fails the
// flights past their delivery timeout.
func (s *bucketSender) expire(now time.Time) {
	for _, f := range s.flights {
		if f.call != 0 && !now.Before(f.callEnds) {
			if f.stream != nil {
				f.stream.fail(transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT, "write stream to %s: no answer within %v",
					f.stream.addr, s.w.opts.RequestTimeout))
			}
			// The stream's failure posts the call's answer; a call whose
			// stream was already broken gets it here.
			s.post(callResult{f: f, call: f.call, out: writeOutcome{err: context.DeadlineExceeded}})
			continue
		}
		if f.call == 0 && !f.resolved() && !now.Before(f.deadline) {
			last := f.lastErr
			if last == nil {
				last = errors.New("not sent")
			}
			s.fail(f, s.timeoutError(f, last))
		}
	}
}

// backOff delays the next call.
func (s *bucketSender) backOff(now time.Time) {
	if !s.boArmed {
		s.bo = newRetryBackoff()
		s.boArmed = true
	}
	s.retryAt = now.Add(s.bo.Next())
}

// nextWake is how long the sender may sleep: until the open batch's
// linger ends, the backoff ends, a call or a batch runs out of time.
func (s *bucketSender) nextWake(now time.Time, lingerLeft time.Duration) time.Duration {
	wait := lingerLeft
	earliest := func(t time.Time) {
		if d := max(t.Sub(now), time.Millisecond); wait == 0 || d < wait {
			wait = d
		}
	}
	if s.retryAt.After(now) {
		earliest(s.retryAt)
	}
	for _, f := range s.flights {
		switch {
		case f.call != 0:
			earliest(f.callEnds)
		case !f.resolved():
			earliest(f.deadline)
		}
	}
	return wait
}

// complete finishes the flights at the front that are answered or failed,
// in order, and returns how many.
func (s *bucketSender) complete() int {
	n := 0
	for _, f := range s.flights {
		if !f.resolved() {
			break
		}
		s.finish(f)
		n++
	}
	if n == 0 {
		return 0
	}
	last := s.flights[n-1]
	clear(s.flights[:n])
	s.flights = s.flights[n:]
	if len(s.flights) == 0 && last.err != nil && last.attempts > 0 && last.writerID == s.writerID {
		// The last batch's fate is unknown and nothing follows it: the
		// bucket carries on under a new writer id, whose sequences cannot
		// clash with anything written before.
		s.writerID, s.freshID = -1, true
	}
	return n
}

// finish completes f's futures and gives back its rows' budget.
func (s *bucketSender) finish(f *flight) {
	b := f.b
	if f.err != nil {
		s.w.opts.Logger.Warn("batch failed", "table", s.w.t.info.Name, "bucket", s.bucket, "rows", b.count, "error", f.err)
		s.w.noteErr(f.err)
		s.w.failed.Add(int64(b.count))
		b.err = f.err
	} else {
		resp := f.resp
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

// abandon fails every batch left once Close gave up (ctx ended).
func (s *bucketSender) abandon(ctx context.Context) {
	for _, f := range s.flights {
		if f.resolved() {
			continue
		}
		f.err = fmt.Errorf("%w: batch of %s for %s bucket %d not acknowledged: %v", ErrWriterClosed, rowCount(f.b.count),
			s.w.t.qualifiedName(), s.bucket, ctx.Err())
		if f.lastErr != nil {
			f.err = fmt.Errorf("%w (last attempt: %w)", f.err, f.lastErr)
		}
	}
	s.complete()
	s.mu.Lock()
	if s.open != nil {
		s.sealLocked()
	}
	queue := s.queue
	s.queue = nil
	if n := len(queue); n > 0 {
		s.newest = queue[n-1]
	}
	s.mu.Unlock()
	for _, b := range queue {
		s.finish(&flight{b: b, err: fmt.Errorf("%w: batch of %s for %s bucket %d not sent: %v", ErrWriterClosed,
			rowCount(b.count), s.w.t.qualifiedName(), s.bucket, ctx.Err())})
	}
}

// timeoutError describes a batch given up on when its time ran out.
func (s *bucketSender) timeoutError(f *flight, last error) error {
	return fmt.Errorf("%w: %s bucket %d, batch of %s, %d attempts in %v: %w", ErrDeliveryTimeout, s.w.t.qualifiedName(), s.bucket,
		rowCount(f.b.count), f.attempts, time.Since(f.b.created).Round(time.Millisecond), last)
}

// rowCount is "1 row" or "n rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
