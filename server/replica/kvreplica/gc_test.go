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

// TestKVGarbageRoundsPace checks a collector round: one file at a time
// with a rest after each, until none is left or the round's bound is
// reached; an error or a refused rest ends it at once.
func TestKVGarbageRoundsPace(t *testing.T) {
	tables := &Tables{log: slog.New(slog.DiscardHandler)}
	rests := 0
	rest := func(d time.Duration) bool {
		if d < 0 {
			t.Fatalf("rest of %v", d)
		}
		rests++
		return true
	}
	db := &fakeGC{files: 3}
	if n := tables.collectGarbageRound(db, rest); n != 3 || db.files != 0 || rests != 3 || db.calls != 4 {
		t.Fatalf("round rewrote %d files in %d calls with %d rests, %d left; want 3 in 4 calls (one file each, then none), 3 rests, 0 left",
			n, db.calls, rests, db.files)
	}

	db = &fakeGC{files: gcMaxFilesPerRound + 5}
	if n := tables.collectGarbageRound(db, rest); n != gcMaxFilesPerRound || db.files != 5 {
		t.Fatalf("a backlog round rewrote %d files, %d left; want the bound %d, 5 left", n, db.files, gcMaxFilesPerRound)
	}

	broken := &fakeGC{err: errors.New("disk on fire")}
	if n := tables.collectGarbageRound(broken, rest); n != 0 || broken.calls != 1 {
		t.Fatalf("a failing database: %d files, %d calls; want 0 and 1", n, broken.calls)
	}

	db = &fakeGC{files: 5}
	if n := tables.collectGarbageRound(db, func(time.Duration) bool { return false }); n != 1 || db.files != 4 {
		t.Fatalf("a refused rest let the round go on: %d files rewritten, %d left; want 1 and 4", n, db.files)
	}
}
