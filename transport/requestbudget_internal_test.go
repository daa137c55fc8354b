package transport

import (
	"errors"
	"testing"
	"time"
)

// TestRequestBudgetLeavesRoomToFinish: packets growing a step at a time
// must not all end up holding part of the budget, each waiting for more.
// With a budget of two largest messages, three packets holding a step
// each leave one step: a fourth packet is not let in (it would take the
// step every holder needs to finish), and a holder's next step is granted.
// Granting whatever fits took the fourth in, and then no packet could
// ever finish.
func TestRequestBudgetLeavesRoomToFinish(t *testing.T) {
	const step = 1 << 20
	b := newRequestBudget(4*step, 2*step)
	never := make(chan struct{})
	past := time.Now().Add(-time.Second) // grant now or not at all
	for i := range 3 {
		if err := b.grow(0, step, past, never); err != nil {
			t.Fatalf("packet %d's first step: %v", i, err)
		}
	}
	if err := b.grow(0, step, past, never); !errors.Is(err, errBudgetTimeout) {
		t.Fatalf("a fourth packet's first step: %v, want it kept waiting", err)
	}
	if err := b.grow(step, step, past, never); err != nil {
		t.Fatalf("a holder's last step: %v", err)
	}
	b.release(2 * step)
	if err := b.grow(0, step, past, never); err != nil {
		t.Fatalf("the fourth packet once a holder finished: %v", err)
	}
	if got := b.used(); got != 3*step {
		t.Fatalf("used %d, want %d", got, 3*step)
	}
}

// TestRequestBudgetWaitEnds: a wait ends when budget comes back, at the
// deadline, or when the connection closes.
func TestRequestBudgetWaitEnds(t *testing.T) {
	const step = 1 << 20
	b := newRequestBudget(2*step, 2*step)
	never := make(chan struct{})
	if err := b.grow(0, 2*step, time.Now().Add(guardWait), never); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.grow(0, step, time.Now().Add(guardWait), never) }()
	b.release(2 * step)
	if err := <-got; err != nil {
		t.Fatalf("a wait after a release: %v", err)
	}
	if err := b.grow(0, step, time.Now().Add(10*time.Millisecond), never); !errors.Is(err, errBudgetTimeout) {
		t.Fatalf("a wait past its deadline: %v", err)
	}
	closed := make(chan struct{})
	close(closed)
	if err := b.grow(0, step, time.Now().Add(guardWait), closed); !errors.Is(err, errBudgetClosed) {
		t.Fatalf("a wait on a closed connection: %v", err)
	}
}

// guardWait bounds the waits that are expected to end sooner.
const guardWait = 20 * time.Second
