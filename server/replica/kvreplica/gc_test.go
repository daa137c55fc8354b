package kvreplica

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

// fakeGC rewrites one of its files per file asked for, until none is left.
type fakeGC struct {
	files int
	err   error
	calls int
}

func (f *fakeGC) CollectGarbage(maxFiles int) (int, error) {
	f.calls++
	if f.err != nil {
		return 0, f.err
	}
	n := min(f.files, maxFiles)
	f.files -= n
	return n, nil
}

// TestKVGarbageRoundsPace checks the collector's rounds: one file per store
// per round, a rest after each rewrite, rounds repeated until no store has
// garbage, and a refused rest stops at once.
func TestKVGarbageRoundsPace(t *testing.T) {
	tables := &Tables{log: slog.New(slog.DiscardHandler)}
	a, b, broken := &fakeGC{files: 3}, &fakeGC{files: 1}, &fakeGC{err: errors.New("disk on fire")}
	stores := map[string]gcTarget{"a": a, "b": b, "broken": broken}
	rests := 0
	rest := func(d time.Duration) bool {
		if d < 0 {
			t.Fatalf("rest of %v", d)
		}
		rests++
		return true
	}
	rounds := 0
	for tables.collectGarbageRound(stores, rest) {
		rounds++
		if rounds > 10 {
			t.Fatal("rounds never end")
		}
	}
	if a.files != 0 || b.files != 0 {
		t.Fatalf("files left: a %d, b %d", a.files, b.files)
	}
	if rounds != 3 || rests != 4 {
		t.Fatalf("%d rounds with rewrites and %d rests, want 3 and 4 (one file per store per round)", rounds, rests)
	}
	if broken.calls != 4 {
		t.Fatalf("a failing store was tried %d times, want every round (4)", broken.calls)
	}

	a.files, b.files = 5, 5
	if tables.collectGarbageRound(stores, func(time.Duration) bool { return false }) {
		t.Fatal("a round whose rest was refused (closing) asks for another")
	}
	if a.files+b.files != 9 {
		t.Fatalf("a refused rest let the round go on: %d files left of 10", a.files+b.files)
	}
}
