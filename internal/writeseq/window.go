package writeseq

import (
	"math"
	"time"

	"github.com/floedb/floe/internal/backoff"
)

// MaxInFlight is the most batches a window may keep on their way: the
// batches a bucket remembers per writer.
const MaxInFlight = 5

// Config tunes a Window.
type Config struct {
	// MaxInFlight is how many batches may be on their way at once (1 to
	// MaxInFlight; 0 means MaxInFlight).
	MaxInFlight int
	// RequestTimeout bounds one call; a call is given up CallGrace after
	// it (the server answers within the timeout, and the grace lets its
	// answer arrive).
	RequestTimeout time.Duration
	CallGrace      time.Duration
	// Backoff paces the resends of a recovery; each recovery starts from a
	// fresh copy.
	Backoff backoff.Backoff
}

// Outcome is what became of one call.
type Outcome int8

const (
	// OK: the batch was acknowledged.
	OK Outcome = iota
	// Duplicate: the bucket had the batch already and answered with its
	// first offsets; an acknowledgement like OK.
	Duplicate
	// Retriable: the call failed with its outcome unknown (a lost answer,
	// NOT_LEADER, a broken stream).
	Retriable
	// TimedOut: no answer from the node (none in time, or the stream it
	// went on broke); retriable, and the call may still be decided later.
	TimedOut
	// OutOfOrder: OUT_OF_ORDER_SEQUENCE.
	OutOfOrder
	// Final: any other error; the batch fails with it.
	Final
)

// Failure says why a flight failed for good.
type Failure int8

const (
	// NotFailed: acknowledged or still on its way.
	NotFailed Failure = iota
	// Refused: a call failed with a final error (or an OUT_OF_ORDER_SEQUENCE
	// that proves the bucket lost the writer's history); the cause is it.
	Refused
	// Expired: the delivery deadline passed; the cause is the last call's
	// error (nil when the batch was never sent) or why no writer id came.
	Expired
	// Given: the caller failed it (Fail); the cause is what it gave.
	Given
	// Unknown: the writer gave up its id with the batch sent under it and
	// a call of it unanswered, which may still be decided later: it may or
	// may not be written. The cause is the refusal that made it give up.
	Unknown
)

// Flight is one batch on its way: sequenced (or waiting for a writer id),
// sent perhaps several times, answered.
type Flight[T any] struct {
	// Item is the caller's batch.
	Item T

	deadline time.Time
	writerID int64 // -1: not sequenced yet
	seq      int32
	attempts int
	call     uint64 // the call out for it, 0 when none
	// unanswered: a call of it under its writer id got no answer from the
	// node (TimedOut): a copy may still be on its way there.
	unanswered bool
	// outAtFailure: a call of it was out, unanswered, when it failed.
	outAtFailure bool
	callEnds     time.Time
	pipelined    bool // the call out (or the last one) was sent pipelined
	acked        bool
	failure      Failure
	cause        error
	failedAt     time.Time
	lastErr      error // what the last call failed with
}

// WriterID is the writer id the batch is sequenced under, -1 when it
// waits for one.
func (f *Flight[T]) WriterID() int64 { return f.writerID }

// Seq is the batch's sequence under WriterID.
func (f *Flight[T]) Seq() int32 { return f.seq }

// Deadline is when the batch fails if not acknowledged.
func (f *Flight[T]) Deadline() time.Time { return f.deadline }

// Attempts is how many calls were made for it.
func (f *Flight[T]) Attempts() int { return f.attempts }

// Call is the number of the call out for it, 0 when none.
func (f *Flight[T]) Call() uint64 { return f.call }

// Pipelined says whether its call out (or the last one) was sent
// pipelined.
func (f *Flight[T]) Pipelined() bool { return f.pipelined }

// Acked says whether it was acknowledged.
func (f *Flight[T]) Acked() bool { return f.acked }

// Failure says whether and why it failed for good, with the cause and
// when.
func (f *Flight[T]) Failure() (why Failure, cause error, at time.Time) {
	return f.failure, f.cause, f.failedAt
}

// LastErr is what its last call failed with, nil when none did.
func (f *Flight[T]) LastErr() error { return f.lastErr }

// MayBeWritten says whether a failed batch may be written all the same: a
// call of it got no answer (it timed out, or its stream broke, or it was
// out when the batch failed), and the node may have decided it, or may
// still. A batch each of whose calls was answered with a refusal (or
// that was never sent) is not written.
func (f *Flight[T]) MayBeWritten() bool {
	return f.failure == Unknown || (f.failure != NotFailed && (f.unanswered || f.outAtFailure))
}

// Resolved says whether it is acknowledged or failed.
func (f *Flight[T]) Resolved() bool { return f.acked || f.failure != NotFailed }

// Window is one writer's batches of one bucket on their way, oldest first,
// and the writer id and sequences they are sent under.
type Window[T any] struct {
	cfg Config

	writerID   int64 // -1: get one before the next batch is sequenced
	freshID    bool  // the next writer id must be a new one, not the writer's shared id
	nextSeq    int32
	ackedOnID  bool // a batch under writerID was acknowledged
	taintedID  bool // a batch under writerID failed, written or not
	flights    []*Flight[T]
	calls      uint64 // calls made; each flight's call out carries its number
	recovering bool   // resend the oldest unanswered batch alone until one succeeds
	retryAt    time.Time
	bo         backoff.Backoff
	boArmed    bool
}

// New returns an empty window that will ask for the writer's shared id
// first.
func New[T any](cfg Config) *Window[T] {
	if cfg.MaxInFlight <= 0 || cfg.MaxInFlight > MaxInFlight {
		cfg.MaxInFlight = MaxInFlight
	}
	return &Window[T]{cfg: cfg, writerID: -1}
}

// Len is how many batches are in the window.
func (w *Window[T]) Len() int { return len(w.flights) }

// Room says whether another batch may join.
func (w *Window[T]) Room() bool { return len(w.flights) < w.cfg.MaxInFlight }

// Flights are the batches in the window, oldest first; the caller must not
// change the slice.
func (w *Window[T]) Flights() []*Flight[T] { return w.flights }

// Recovering says whether the window resends its oldest unanswered batch
// alone.
func (w *Window[T]) Recovering() bool { return w.recovering }

// Add puts a batch in the window, to be acknowledged by deadline.
func (w *Window[T]) Add(item T, deadline time.Time) *Flight[T] {
	f := &Flight[T]{Item: item, writerID: -1, deadline: deadline}
	w.flights = append(w.flights, f)
	return f
}

// ToSequence is the oldest batch waiting for its sequence, nil when none.
// The caller makes sure there is a writer id (WriterID), then calls
// Sequence.
func (w *Window[T]) ToSequence() *Flight[T] {
	for _, f := range w.flights {
		if f.writerID < 0 && !f.Resolved() {
			return f
		}
	}
	return nil
}

// WriterID is the writer id the next batch is sequenced under and the
// sequence it gets; id -1 means the caller must get one first (a new one
// when fresh, else the writer's shared one) and call SetWriterID.
func (w *Window[T]) WriterID() (id int64, seq int32, fresh bool) {
	return w.writerID, w.nextSeq, w.freshID
}

// SetWriterID starts a writer id: its sequences start at 0.
func (w *Window[T]) SetWriterID(id int64) {
	w.writerID, w.freshID, w.nextSeq, w.ackedOnID, w.taintedID = id, false, 0, false, false
}

// WriterIDFailed says that no writer id could be had for f: f fails when
// the error is final or its time is up, and the window backs off
// otherwise.
func (w *Window[T]) WriterIDFailed(f *Flight[T], retriable bool, err error, now time.Time) {
	if !retriable || !now.Before(f.deadline) {
		w.fail(f, Expired, err, now)
		return
	}
	w.backOff(now)
}

// Sequence gives f the window's writer id and its next sequence (the
// window must have a writer id).
func (w *Window[T]) Sequence(f *Flight[T]) {
	f.unanswered = false
	if w.writerID < 0 {
		panic("writeseq: Sequence without a writer id")
	}
	f.writerID, f.seq = w.writerID, w.nextSeq
	if w.nextSeq == math.MaxInt32 {
		w.nextSeq = 0
	} else {
		w.nextSeq++
	}
}

// Fail fails f for good with err, as given.
func (w *Window[T]) Fail(f *Flight[T], err error, now time.Time) {
	w.fail(f, Given, err, now)
}

// ToSend returns the batches to send now, in order, each given its call
// number and pipelined flag: up to the ones the rules let through (the
// first of a writer id alone; in recovery the oldest unanswered alone,
// once no call is out). The caller sends each (CallTimeout says for how
// long) and answers each call with Answer.
func (w *Window[T]) ToSend(now time.Time) []*Flight[T] {
	if now.Before(w.retryAt) {
		return nil
	}
	out := 0
	for _, f := range w.flights {
		if f.call != 0 {
			out++
		}
	}
	var send []*Flight[T]
	for i, f := range w.flights {
		if f.Resolved() || f.call != 0 {
			continue
		}
		if f.writerID < 0 {
			break // waiting for a writer id; the later ones too
		}
		// In recovery, or before the writer id's first acknowledgement,
		// one call at a time (every earlier flight is resolved here: one
		// still unanswered would have been sent or be out).
		if (w.recovering || !w.ackedOnID) && out > 0 {
			break
		}
		w.calls++
		f.call, f.pipelined, f.attempts = w.calls, w.pipelined(i), f.attempts+1
		f.callEnds = now.Add(w.CallTimeout(f, now) + w.cfg.CallGrace)
		send = append(send, f)
		out++
		if w.recovering {
			break
		}
	}
	return send
}

// CallTimeout is how long f's call may take from now: the request timeout,
// or less when its deadline comes first.
func (w *Window[T]) CallTimeout(f *Flight[T], now time.Time) time.Duration {
	return min(w.cfg.RequestTimeout, f.deadline.Sub(now))
}

// pipelined says whether flight i has an earlier batch of its writer id
// that is not acknowledged.
func (w *Window[T]) pipelined(i int) bool {
	f := w.flights[i]
	if f.writerID == w.writerID && w.taintedID {
		return true
	}
	for _, e := range w.flights[:i] {
		if e.writerID == f.writerID && !e.acked {
			return true
		}
	}
	return false
}

// Answer applies the outcome of call (err says what failed, for the
// failed ones). An answer to a call given up on changes nothing. It
// reports whether the caller should refresh the bucket's leader before the
// next call (a retriable failure: the leader may have moved).
func (w *Window[T]) Answer(f *Flight[T], call uint64, o Outcome, err error, now time.Time) (refresh bool) {
	if f.call != call || f.Resolved() {
		return false
	}
	f.call = 0
	switch o {
	case OK, Duplicate:
		if w.recovering && w.oldestUnanswered() == f {
			// What recovery resent got through: the others may follow.
			w.recovering = false
			w.boArmed = false
		}
		f.acked = true
		if f.writerID == w.writerID {
			w.ackedOnID = true
		}
		return false
	case OutOfOrder:
		f.lastErr = err
		w.outOfOrder(f, err, now)
		return false
	case Final:
		f.lastErr = err
		w.fail(f, Refused, err, now)
		return false
	}
	f.lastErr = err
	if o == TimedOut {
		f.unanswered = true
	}
	if !now.Before(f.deadline) {
		w.fail(f, Expired, err, now)
		return false
	}
	w.recovering = true
	w.backOff(now)
	return true
}

// oldestUnanswered is the first flight neither acknowledged nor failed.
func (w *Window[T]) oldestUnanswered() *Flight[T] {
	for _, f := range w.flights {
		if !f.Resolved() {
			return f
		}
	}
	return nil
}

// outOfOrder applies the OUT_OF_ORDER_SEQUENCE rules (Writers 5).
func (w *Window[T]) outOfOrder(f *Flight[T], err error, now time.Time) {
	oldest := w.oldestUnanswered() == f
	predecessorFailed := f.writerID == w.writerID && w.taintedID
	for _, e := range w.flights {
		if e == f {
			break
		}
		if e.writerID == f.writerID && e.failure != NotFailed {
			predecessorFailed = true
		}
	}
	switch {
	case oldest && predecessorFailed:
		// Not written: it and what follows start over under a new id.
		w.resequenceFrom(f, err, now)
	case f.pipelined || !oldest:
		// Its predecessor was undecided when it was sent, or still is.
		if !now.Before(f.deadline) {
			w.fail(f, Expired, err, now)
			return
		}
		w.recovering = true
		w.backOff(now)
	default:
		w.fail(f, Refused, err, now)
		if next := w.after(f); next != nil {
			w.resequenceFrom(next, err, now)
		}
	}
}

// after is the flight after f, nil when f is the last.
func (w *Window[T]) after(f *Flight[T]) *Flight[T] {
	for i, e := range w.flights {
		if e == f && i+1 < len(w.flights) {
			return w.flights[i+1]
		}
	}
	return nil
}

// resequenceFrom gives flight f and every later unanswered one a new
// writer id and sequences, none of them written: they are sent again. One
// with a call the node never answered fails instead (Unknown): a copy of
// it may still reach the node under the old id, behind the batches the
// node refused, and land there, and again under the new id.
func (w *Window[T]) resequenceFrom(f *Flight[T], cause error, now time.Time) {
	from := false
	for _, e := range w.flights {
		if e == f {
			from = true
		}
		if !from || e.Resolved() {
			continue
		}
		if e.unanswered {
			w.fail(e, Unknown, cause, now)
			continue
		}
		e.writerID, e.call = -1, 0
	}
	w.writerID, w.freshID = -1, true
	w.recovering = false
}

// fail fails f for good; its outcome may be unknown.
func (w *Window[T]) fail(f *Flight[T], why Failure, err error, now time.Time) {
	f.outAtFailure = f.call != 0
	f.failure, f.cause, f.failedAt, f.call = why, err, now, 0
	if f.writerID == w.writerID && f.attempts > 0 {
		w.taintedID = true
	}
}

// Expire fails the batches not out whose deadline passed, and returns
// those whose call is out past its time: the caller gives each up (the
// stream it went on may hang: it breaks it) and answers it TimedOut.
func (w *Window[T]) Expire(now time.Time) []*Flight[T] {
	var late []*Flight[T]
	for _, f := range w.flights {
		if f.call != 0 && !now.Before(f.callEnds) {
			late = append(late, f)
			continue
		}
		if f.call == 0 && !f.Resolved() && !now.Before(f.deadline) {
			w.fail(f, Expired, f.lastErr, now)
		}
	}
	return late
}

// backOff delays the next call.
func (w *Window[T]) backOff(now time.Time) {
	if !w.boArmed {
		w.bo = w.cfg.Backoff
		w.boArmed = true
	}
	w.retryAt = now.Add(w.bo.Next())
}

// NextWake is the next time the window has something to do of its own
// accord: a backoff ends, a call or a batch runs out of time; zero when
// none.
func (w *Window[T]) NextWake(now time.Time) time.Time {
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if w.retryAt.After(now) {
		earliest(w.retryAt)
	}
	for _, f := range w.flights {
		switch {
		case f.call != 0:
			earliest(f.callEnds)
		case !f.Resolved():
			earliest(f.deadline)
		}
	}
	return next
}

// PopCompleted removes the batches at the front that are acknowledged or
// failed, in order, and returns them.
func (w *Window[T]) PopCompleted() []*Flight[T] {
	n := 0
	for _, f := range w.flights {
		if !f.Resolved() {
			break
		}
		n++
	}
	if n == 0 {
		return nil
	}
	done := make([]*Flight[T], n)
	copy(done, w.flights)
	clear(w.flights[:n])
	w.flights = w.flights[n:]
	last := done[n-1]
	if len(w.flights) == 0 && last.failure != NotFailed && last.attempts > 0 && last.writerID == w.writerID {
		// The last batch's fate is unknown and nothing follows it: the
		// bucket carries on under a new writer id, whose sequences cannot
		// clash with anything written before.
		w.writerID, w.freshID = -1, true
	}
	return done
}
