package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/writeseq"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// bucketSender batches one bucket's rows and sends its batches from its
// own goroutine, up to MaxInFlight at once, on the write stream to the
// bucket's leader. Which batch goes when, under which writer id and
// sequence, pipelined or not, and what each answer means for it, is
// decided by its writeseq.Window (the rules of docs/replication.md,
// Writers); the sender does the I/O around it: the open batch and its
// linger, writer ids, leader lookups and metadata refreshes, the write
// streams, the batches' futures and the buffer budget.
type bucketSender struct {
	w      *writer
	t      *Table // the table's handle, or its partition's
	bucket int32
	wakeCh chan struct{} // capacity 1: "something changed"

	mu     sync.Mutex
	open   *pendingBatch   // taking rows; nil when none
	queue  []*pendingBatch // sealed, oldest first
	newest *pendingBatch   // the last batch taken off the queue

	resMu   sync.Mutex
	results []callResult // answers not yet handled

	// Owned by the sender goroutine.
	win *writeseq.Window[*sending]
}

// callGrace is how long past its timeout a call's answer is waited for.
const callGrace = 500 * time.Millisecond

// sending is what the sender keeps of a batch in its window: its rows,
// its bytes once sequenced (resent unchanged), and its last call.
type sending struct {
	b       *pendingBatch
	batch   []byte
	stream  *writeStream // the last call's
	version uint64       // the metadata version the last call's leader came from
	resp    *pb.ProduceResponse
}

// flight is one batch in the window.
type flight = writeseq.Flight[*sending]

// callResult is the answer to one call.
type callResult struct {
	f    *flight
	call uint64
	out  writeOutcome
}

func newBucketSender(w *writer, t *Table, bucket int32) *bucketSender {
	return &bucketSender{w: w, t: t, bucket: bucket, wakeCh: make(chan struct{}, 1), win: writeseq.New[*sending](writeseq.Config{
		MaxInFlight: w.opts.MaxInFlight, RequestTimeout: w.opts.RequestTimeout, CallGrace: callGrace, Backoff: newRetryBackoff()})}
}

// add puts a row in the open batch, sealing batches as they fill, and
// returns the batch and the row's index in it.
func (s *bucketSender) add(change record.ChangeType, row []byte, recordBytes int) (*pendingBatch, int) {
	batchBytes := s.w.opts.BatchBytes
	s.mu.Lock()
	wake := false
	if s.open != nil && s.open.size+recordBytes > batchBytes {
		s.open.full = true
		s.sealLocked()
		wake = true
	}
	if s.open == nil {
		s.open = newPendingBatch(s.bucket, s.w.buffers.get())
		wake = true // arm the linger timer
	}
	b := s.open
	index := b.add(change, row, recordBytes)
	if b.size+record.RecordSize(0) > batchBytes {
		b.full = true
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
		if stop && s.win.Len() == 0 {
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
// seals the open batch once its linger is over. With the default linger
// that is at once when nothing is in flight, and otherwise after the
// linger and once no other batch of the bucket that went out before it
// was full is unanswered (Nagle's rule, for batches): under load a
// bucket's batches then grow with the round trip, rather than going every
// linger, each a few rows and each paying a batch's fixed costs (its
// encoding, append, replication and fsync), as happened to rows spread
// over many partitions. It returns how long the open batch may still
// linger (0: none waits, or it waits for an answer, which wakes the
// sender), and stop once the writer is closing and the bucket holds no
// rows outside the flights.
func (s *bucketSender) admit(now time.Time) (lingerLeft time.Duration, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	closing := isClosed(s.w.closing)
	for s.win.Room() {
		if len(s.queue) == 0 && s.open != nil {
			left := s.w.opts.Linger - now.Sub(s.open.created)
			idle := s.w.opts.lingerIdle && s.win.Len() == 0
			if !closing && !idle && left > 0 {
				return left, false
			}
			if !closing && !idle && s.w.opts.lingerIdle && s.partFullUnanswered() {
				return 0, false
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
		s.win.Add(&sending{b: b}, b.created.Add(s.w.opts.DeliveryTimeout))
	}
	return 0, closing && len(s.queue) == 0 && s.open == nil
}

// partFullUnanswered reports whether a batch sealed before it was full is
// in flight and unanswered.
func (s *bucketSender) partFullUnanswered() bool {
	for _, f := range s.win.Flights() {
		if !f.Item.b.full && !f.Resolved() {
			return true
		}
	}
	return false
}

// sequence gives the batches waiting for one a writer id and the next
// sequences, in order, and builds their batches.
func (s *bucketSender) sequence(ctx context.Context) {
	for f := s.win.ToSequence(); f != nil; f = s.win.ToSequence() {
		writerID, seq, _ := s.win.WriterID()
		if writerID < 0 {
			if !s.allocateWriterID(ctx, f) {
				return
			}
			writerID, seq, _ = s.win.WriterID()
		}
		batch, err := f.Item.b.build(record.BatchOptions{
			SchemaID: s.t.schemaID, Format: record.PayloadRows, Compression: s.w.opts.Compression,
			Codec: s.w.codec, AppendOnly: s.w.kind.appendOnly, HasWriter: true, WriterID: writerID, Sequence: seq,
		}, s.w.format)
		if err != nil {
			s.win.Fail(f, pkgerr.Errorf("client", "build batch for bucket %d: %w", s.bucket, err), time.Now())
			continue
		}
		f.Item.batch = batch
		s.win.Sequence(f)
	}
}

// allocateWriterID gets the window its writer id (the writer's shared one,
// or a new one after a failure). On failure the window fails f when the
// error is final or f's time is up, and backs off otherwise; false means
// no id.
func (s *bucketSender) allocateWriterID(ctx context.Context, f *flight) bool {
	actx, cancel := context.WithDeadline(ctx, f.Deadline())
	defer cancel()
	var id int64
	var err error
	if _, _, fresh := s.win.WriterID(); fresh {
		id, err = s.t.c.allocateWriterID(actx)
	} else {
		id, err = s.w.sharedWriterID(actx)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.win.WriterIDFailed(f, retriable(err), err, time.Now())
		}
		return false
	}
	s.win.SetWriterID(id)
	return true
}

// sendReady sends the batches the window lets go now.
func (s *bucketSender) sendReady(ctx context.Context, now time.Time) {
	for _, f := range s.win.ToSend(now) {
		s.startCall(ctx, f, s.win.CallTimeout(f, now))
	}
}

// startCall sends f to the bucket's leader of the moment.
func (s *bucketSender) startCall(ctx context.Context, f *flight, timeout time.Duration) {
	it, id := f.Item, f.Call()
	addr, version, err := s.t.leader(s.bucket)
	it.version = version
	if err != nil {
		s.post(callResult{f: f, call: id, out: writeOutcome{err: err}})
		return
	}
	st, err := s.t.c.writes.stream(ctx, addr)
	if err != nil {
		s.post(callResult{f: f, call: id, out: writeOutcome{err: err}})
		return
	}
	// The server answers within timeout; the window's grace lets its
	// answer (a timeout of its own, say) arrive before the call is given
	// up on.
	it.stream = st
	call := s.w.kind.call(batchCall{tableID: s.t.info.ID, bucket: s.bucket, acks: s.w.opts.Acks.wire(), batch: it.batch,
		timeoutMs: int32(max(timeout.Milliseconds(), 1)), pipelined: f.Pipelined(), writerToken: s.t.c.writerToken(it.batch)})
	st.start(call, func(o writeOutcome) { s.post(callResult{f: f, call: id, out: o}) })
}

// handleResults gives the window the answers that came in.
func (s *bucketSender) handleResults(ctx context.Context, now time.Time) {
	s.resMu.Lock()
	results := s.results
	s.results = nil
	s.resMu.Unlock()
	for _, r := range results {
		err := r.out.err
		if r.f.Call() != r.call || r.f.Resolved() {
			continue // the answer to a call given up on
		}
		if err != nil && ctx.Err() != nil {
			continue // abandon fails it
		}
		if err == nil {
			r.f.Item.resp = r.out.resp
		}
		if s.win.Answer(r.f, r.call, outcomeOf(r.out), err, now) {
			s.w.opts.Logger.Debug("batch failed, retrying", "bucket", s.bucket, "attempt", r.f.Attempts(), "error", err)
			// Bounded: the table's refresh is shared by its senders, and a
			// metadata service that does not answer must not hold them all
			// past their batches' time (a failed refresh shows up as the
			// next attempt's error).
			rctx, cancel := context.WithTimeout(ctx, min(s.w.opts.RequestTimeout, max(time.Until(r.f.Deadline()), time.Millisecond)))
			_ = s.t.refreshAfter(rctx, r.f.Item.version)
			cancel()
		}
	}
}

// outcomeOf classifies a call's answer for the window.
func outcomeOf(o writeOutcome) writeseq.Outcome {
	switch {
	case o.err == nil && o.resp != nil && o.resp.Duplicate:
		return writeseq.Duplicate
	case o.err == nil:
		return writeseq.OK
	case errors.Is(o.err, transport.ErrOutOfOrderSequence):
		return writeseq.OutOfOrder
	case o.unanswered, errors.Is(o.err, context.DeadlineExceeded):
		return writeseq.TimedOut
	case retriable(o.err):
		return writeseq.Retriable
	}
	return writeseq.Final
}

// expire gives up on calls out past their time (the stream they went on
// may hang: it is broken, so the next call opens another); the window
// fails the batches past their delivery timeout.
func (s *bucketSender) expire(now time.Time) {
	for _, f := range s.win.Expire(now) {
		if st := f.Item.stream; st != nil {
			st.fail(transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT, "write stream to %s: no answer within %v",
				st.addr, s.w.opts.RequestTimeout))
		}
		// The stream's failure posts the call's answer; a call whose
		// stream was already broken gets it here.
		s.post(callResult{f: f, call: f.Call(), out: writeOutcome{err: context.DeadlineExceeded}})
	}
}

// nextWake is how long the sender may sleep: until the open batch's
// linger ends, or the window has something to do (a backoff ends, a call
// or a batch runs out of time).
func (s *bucketSender) nextWake(now time.Time, lingerLeft time.Duration) time.Duration {
	wait := lingerLeft
	if t := s.win.NextWake(now); !t.IsZero() {
		if d := max(t.Sub(now), time.Millisecond); wait == 0 || d < wait {
			wait = d
		}
	}
	return wait
}

// complete finishes the batches at the front that are answered or failed,
// in order, and returns how many.
func (s *bucketSender) complete() int {
	done := s.win.PopCompleted()
	for _, f := range done {
		s.finish(f)
	}
	return len(done)
}

// finish completes f's futures and gives back its rows' budget.
func (s *bucketSender) finish(f *flight) {
	s.finishBatch(f.Item.b, s.flightErr(f), f.Item.resp, f.MayBeWritten())
}

// flightErr is what a failed batch's future says, nil for one
// acknowledged.
func (s *bucketSender) flightErr(f *flight) error {
	why, cause, at := f.Failure()
	switch why {
	case writeseq.NotFailed:
		return nil
	case writeseq.Refused:
		if s.t.part != nil && errors.Is(cause, transport.ErrUnknownTable) {
			// The partition was dropped: its nodes no longer know its id.
			// Its next row loads it again, or creates it anew.
			s.w.forgetPartition(s.t)
			return fmt.Errorf("%w: %s: %s bucket %d: the partition was dropped (%v)", ErrUnknownPartition, s.w.kind.name,
				s.t.qualifiedName(), s.bucket, cause)
		}
		return pkgerr.Errorf("client", "%s: %s bucket %d: %w", s.w.kind.name, s.t.qualifiedName(), s.bucket, cause)
	case writeseq.Unknown:
		return fmt.Errorf("%w: %s bucket %d, batch of %s: sent, unanswered, then its writer's sequence broke (%v): it may or may not be written",
			ErrOutcomeUnknown, s.t.qualifiedName(), s.bucket, rowCount(f.Item.b.count), cause)
	case writeseq.Expired:
		if cause == nil {
			cause = errors.New("not sent")
		}
		return fmt.Errorf("%w: %s bucket %d, batch of %s, %d attempts in %v: %w", ErrDeliveryTimeout, s.t.qualifiedName(), s.bucket,
			rowCount(f.Item.b.count), f.Attempts(), at.Sub(f.Item.b.created).Round(time.Millisecond), cause)
	}
	return cause
}

// finishBatch completes b's futures, with err or with resp, and gives
// back its rows' budget; unknown says a failed batch may be written.
func (s *bucketSender) finishBatch(b *pendingBatch, err error, resp *pb.ProduceResponse, unknown bool) {
	if err != nil {
		s.w.opts.Logger.Warn("batch failed", "table", s.t.info.Name, "bucket", s.bucket, "rows", b.count,
			"outcome_unknown", unknown, "error", err)
		s.w.noteErr(err)
		s.w.failed.Add(int64(b.count))
		if unknown {
			s.w.unknown.Add(int64(b.count))
		}
		b.err = err
	} else {
		s.w.acked.Add(int64(b.count))
		s.w.batches.Add(1)
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
	s.w.buffers.put(buf)
}

// abandon fails every batch left once Close gave up (ctx ended).
func (s *bucketSender) abandon(ctx context.Context) {
	now := time.Now()
	for _, f := range s.win.Flights() {
		if f.Resolved() {
			continue
		}
		err := fmt.Errorf("%w: batch of %s for %s bucket %d not acknowledged: %v", ErrWriterClosed, rowCount(f.Item.b.count),
			s.t.qualifiedName(), s.bucket, ctx.Err())
		if last := f.LastErr(); last != nil {
			err = fmt.Errorf("%w (last attempt: %w)", err, last)
		}
		s.win.Fail(f, err, now)
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
		s.finishBatch(b, fmt.Errorf("%w: batch of %s for %s bucket %d not sent: %v", ErrWriterClosed,
			rowCount(b.count), s.t.qualifiedName(), s.bucket, ctx.Err()), nil, false)
	}
}

// rowCount is "1 row" or "n rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}
