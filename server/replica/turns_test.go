package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
)

// TestPipelinedFromUnknownWriter: a bucket with no history of a writer
// takes its batch as the writer's first only when the batch says nothing
// of it is still on the way (not pipelined).
func TestPipelinedFromUnknownWriter(t *testing.T) {
	wt := newWriterTable()
	if _, err := wt.check(9, 4, true); !errors.Is(err, transport.ErrOutOfOrderSequence) {
		t.Fatalf("pipelined batch of an unknown writer: %v, want OUT_OF_ORDER_SEQUENCE", err)
	}
	if dup, err := wt.check(9, 4, false); dup != nil || err != nil {
		t.Fatalf("first batch of an unknown writer: %v %v", dup, err)
	}
	wt.record(writerBatchOf(t, 9, 4, 0))
	if dup, err := wt.check(9, 5, true); dup != nil || err != nil {
		t.Fatalf("pipelined successor of a known writer: %v %v", dup, err)
	}
}

// TestTurnsDecideInOrder: client writes are decided in the order their
// turns were taken, whichever reaches the write path first: a writer's
// second batch, pipelined, waits for its first instead of being refused
// as the batch of a writer the bucket does not know yet.
func TestTurnsDecideInOrder(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	lead(r, 1)
	first, second := r.TakeTurn(false), r.TakeTurn(true)
	type answer struct {
		base int64
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := r.produce(context.Background(), second, writerBatchN(t, 100, 1, 1, "b"), AcksLeader, 5*time.Second)
		if err != nil {
			done <- answer{err: err}
			return
		}
		done <- answer{base: resp.BaseOffset}
	}()
	// The second write waits for its turn.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.turns.mu.Lock()
		_, waiting := r.turns.waiting[second.n]
		r.turns.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second write did not wait for its turn")
		}
		time.Sleep(time.Millisecond)
	}
	resp, err := r.produce(context.Background(), first, writerBatchN(t, 100, 0, 1, "a"), AcksLeader, 5*time.Second)
	if err != nil || resp.BaseOffset != 0 {
		t.Fatalf("first write: %+v %v", resp, err)
	}
	if a := <-done; a.err != nil || a.base != 1 {
		t.Fatalf("second write: offset %d, %v; want offset 1", a.base, a.err)
	}
}

// TestForgoneTurnPasses: a write that fails before the write path gives
// its turn up, and the writes after it go on.
func TestForgoneTurnPasses(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	lead(r, 1)
	failed, next := r.TakeTurn(false), r.TakeTurn(false)
	failed.Forgo()
	failed.Forgo() // a second Forgo, as a deferred one after a use, is a no-op
	if _, err := r.produce(context.Background(), next, writerBatchN(t, 100, 0, 1, "a"), AcksLeader, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	next.Forgo() // used: left alone
	produceLeader(t, r, writerBatchN(t, 100, 1, 1, "b"))
}
