package writeseq

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/internal/backoff"
)

var t0 = time.Unix(1_000_000, 0)

var errLost = errors.New("answer lost")

// newTestWindow is a window of n batches (items 0..n-1) under writer id 7,
// with a fixed 10 ms backoff.
func newTestWindow(t *testing.T, n int) *Window[int] {
	t.Helper()
	w := New[int](Config{RequestTimeout: time.Second, Backoff: backoff.Backoff{Min: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	for i := range n {
		w.Add(i, t0.Add(time.Minute))
	}
	sequenceAll(w, 7)
	return w
}

// sequenceAll sequences every batch waiting, under id when the window asks
// for one.
func sequenceAll(w *Window[int], id int64) {
	for f := w.ToSequence(); f != nil; f = w.ToSequence() {
		if got, _, _ := w.WriterID(); got < 0 {
			w.SetWriterID(id)
		}
		w.Sequence(f)
	}
}

type sent struct {
	item      int
	writerID  int64
	seq       int32
	pipelined bool
}

func sends(fs []*Flight[int]) []sent {
	var out []sent
	for _, f := range fs {
		out = append(out, sent{f.Item, f.WriterID(), f.Seq(), f.Pipelined()})
	}
	return out
}

// wantFreshID fails unless the window waits for a new writer id.
func wantFreshID(t *testing.T, w *Window[int]) {
	t.Helper()
	if id, _, fresh := w.WriterID(); id != -1 || !fresh {
		t.Fatalf("writer id %d fresh %v, want a new one", id, fresh)
	}
}

// TestFirstBatchAloneThenPipelined: Writers 1-3: sequences in order, the
// first batch of a writer id alone and not pipelined, the rest pipelined
// once it is acknowledged.
func TestFirstBatchAloneThenPipelined(t *testing.T) {
	w := newTestWindow(t, 4)
	first := w.ToSend(t0)
	if want := []sent{{0, 7, 0, false}}; !slices.Equal(sends(first), want) {
		t.Fatalf("first send %+v, want %+v", sends(first), want)
	}
	if got := w.ToSend(t0); len(got) != 0 {
		t.Fatalf("sent %+v before the first acknowledgement", sends(got))
	}
	w.Answer(first[0], first[0].Call(), OK, nil, t0)
	rest := w.ToSend(t0)
	if want := []sent{{1, 7, 1, false}, {2, 7, 2, true}, {3, 7, 3, true}}; !slices.Equal(sends(rest), want) {
		t.Fatalf("pipeline %+v, want %+v", sends(rest), want)
	}
	// Completion is in order: the last answered first waits.
	w.Answer(rest[2], rest[2].Call(), OK, nil, t0)
	if done := w.PopCompleted(); len(done) != 1 || done[0].Item != 0 {
		t.Fatalf("completed %d batches", len(done))
	}
}

// TestRecoveryResendsOldestAlone: Writers 4: after a lost answer nothing
// is sent while calls are out; then the oldest unanswered goes alone,
// after the backoff, and once it is acknowledged the rest follow.
func TestRecoveryResendsOldestAlone(t *testing.T) {
	w := newTestWindow(t, 4)
	f0 := w.ToSend(t0)[0]
	w.Answer(f0, f0.Call(), OK, nil, t0)
	out := w.ToSend(t0) // 1, 2, 3
	if !w.Answer(out[0], out[0].Call(), Retriable, errLost, t0) {
		t.Fatal("a retriable failure asked for no refresh")
	}
	if got := w.ToSend(t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("sent %+v with calls out in recovery", sends(got))
	}
	w.Answer(out[1], out[1].Call(), OutOfOrder, errLost, t0) // pipelined: retriable
	w.Answer(out[2], out[2].Call(), OK, nil, t0)
	if got := w.ToSend(t0); len(got) != 0 {
		t.Fatal("sent before the backoff ended")
	}
	later := t0.Add(time.Second)
	resend := w.ToSend(later)
	if want := []sent{{1, 7, 1, false}}; !slices.Equal(sends(resend), want) {
		t.Fatalf("recovery sent %+v, want %+v", sends(resend), want)
	}
	w.Answer(resend[0], resend[0].Call(), Duplicate, nil, later)
	if got := sends(w.ToSend(later)); !slices.Equal(got, []sent{{2, 7, 2, false}}) {
		t.Fatalf("after recovery %+v", got)
	}
}

// TestOutOfOrderAfterFailureResequences: Writers 5: the oldest unanswered
// batch refused OUT_OF_ORDER after its predecessor failed was not
// written: it and the later ones go again under a fresh writer id.
func TestOutOfOrderAfterFailureResequences(t *testing.T) {
	w := newTestWindow(t, 3)
	f0 := w.ToSend(t0)[0]
	w.Answer(f0, f0.Call(), Final, errLost, t0)
	if done := w.PopCompleted(); len(done) != 1 {
		t.Fatal("the failed batch did not complete")
	}
	f1 := w.ToSend(t0)[0]
	if !f1.Pipelined() {
		t.Fatal("a batch after a failed one of its writer id was not sent pipelined")
	}
	w.Answer(f1, f1.Call(), OutOfOrder, errLost, t0)
	wantFreshID(t, w)
	sequenceAll(w, 8)
	if got := sends(w.ToSend(t0)); !slices.Equal(got, []sent{{1, 8, 0, false}}) {
		t.Fatalf("re-sequenced %+v", got)
	}
}

// TestUnansweredBatchNotResequenced: a batch a call of which went
// unanswered (its stream broke: the node may still decide that copy) is
// not re-sequenced when OUT_OF_ORDER shows its predecessor failed: the old
// copy could land under the old id, and the new one under the new, its
// rows twice. It fails with its outcome unknown; an answered one after it
// goes again under the new id.
func TestUnansweredBatchNotResequenced(t *testing.T) {
	w := newTestWindow(t, 4)
	f0 := w.ToSend(t0)[0]
	w.Answer(f0, f0.Call(), OK, nil, t0)
	out := w.ToSend(t0) // items 1, 2, 3 pipelined
	if len(out) != 3 {
		t.Fatalf("sent %+v", sends(out))
	}
	f1, f2, f3 := out[0], out[1], out[2]
	w.Answer(f1, f1.Call(), Final, errLost, t0)      // refused for good
	w.Answer(f2, f2.Call(), TimedOut, errLost, t0)   // its stream broke
	w.Answer(f3, f3.Call(), OutOfOrder, errLost, t0) // answered: not written
	w.PopCompleted()
	now := t0.Add(time.Second)
	resent := w.ToSend(now)
	if len(resent) != 1 || resent[0] != f2 {
		t.Fatalf("recovery resent %+v, want item 2 alone", sends(resent))
	}
	w.Answer(f2, f2.Call(), OutOfOrder, errLost, now)
	if why, _, _ := f2.Failure(); why != Unknown {
		t.Fatalf("the batch with an unanswered call: failure %v, want Unknown", why)
	}
	if why, _, _ := f3.Failure(); why != NotFailed || f3.WriterID() != -1 {
		t.Fatalf("the answered batch after it: failure %v, writer id %d; want it waiting for a new id", why, f3.WriterID())
	}
	wantFreshID(t, w)
}

// TestOutOfOrderWithHistoryLost: Writers 5: OUT_OF_ORDER for a batch sent
// with every predecessor acknowledged fails it; the later ones start a
// new writer id.
func TestOutOfOrderWithHistoryLost(t *testing.T) {
	w := newTestWindow(t, 2)
	f0 := w.ToSend(t0)[0]
	w.Answer(f0, f0.Call(), OutOfOrder, errLost, t0)
	if why, _, _ := f0.Failure(); why != Refused {
		t.Fatalf("failure %v", why)
	}
	wantFreshID(t, w)
}

// TestExpiry: Writers 6 and 7: a call past its timeout is handed back to
// be given up; a batch past its deadline fails, and the next starts a new
// writer id when nothing follows.
func TestExpiry(t *testing.T) {
	w := newTestWindow(t, 1)
	f := w.ToSend(t0)[0]
	if late := w.Expire(t0.Add(2 * time.Second)); len(late) != 1 || late[0] != f {
		t.Fatal("a call past its timeout was not given up")
	}
	w.Answer(f, f.Call(), TimedOut, errLost, t0.Add(2*time.Second))
	w.Expire(t0.Add(time.Hour))
	if why, cause, _ := f.Failure(); why != Expired || cause != errLost {
		t.Fatalf("failure %v %v", why, cause)
	}
	w.PopCompleted()
	wantFreshID(t, w)
}

// TestMayBeWritten: a failed batch may be written when a call of it got no
// answer (timed out, stream broken, or out when it failed), not when every
// call was answered with a refusal or none was made.
func TestMayBeWritten(t *testing.T) {
	deadline := t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		run  func(w *Window[int], f *Flight[int])
		want bool
	}{
		{"refused", func(w *Window[int], f *Flight[int]) { w.Answer(f, f.Call(), Final, errLost, t0) }, false},
		{"refused retriably until its deadline", func(w *Window[int], f *Flight[int]) {
			w.Answer(f, f.Call(), Retriable, errLost, deadline)
		}, false},
		{"timed out, then its deadline", func(w *Window[int], f *Flight[int]) {
			w.Answer(f, f.Call(), TimedOut, errLost, deadline)
		}, true},
		{"given up with its call out", func(w *Window[int], f *Flight[int]) { w.Fail(f, errLost, t0) }, true},
		{"acknowledged", func(w *Window[int], f *Flight[int]) { w.Answer(f, f.Call(), OK, nil, t0) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTestWindow(t, 1)
			f := w.ToSend(t0)[0]
			tc.run(w, f)
			if got := f.MayBeWritten(); got != tc.want {
				t.Fatalf("MayBeWritten = %v, want %v", got, tc.want)
			}
		})
	}
	w := New[int](Config{RequestTimeout: time.Second})
	w.Add(0, t0.Add(time.Second))
	w.Expire(t0.Add(time.Hour)) // never sent
	if f := w.Flights()[0]; f.MayBeWritten() {
		t.Fatal("a batch never sent may be written")
	}
}
