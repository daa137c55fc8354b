package kvreplica

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"
)

// fakeGC holds value-log files by their garbage share and rewrites, per
// file asked for, the one with the most garbage if it has at least the
// share asked for (0: half, the default configured share).
type fakeGC struct {
	garbage []float64
	err     error
	calls   int
	asked   []float64
}

func (f *fakeGC) CollectGarbage(maxFiles int, minDiscard float64) (int, error) {
	f.calls++
	f.asked = append(f.asked, minDiscard)
	if f.err != nil {
		return 0, f.err
	}
	if minDiscard == 0 {
		minDiscard = 0.5
	}
	n := 0
	for n < maxFiles && len(f.garbage) > 0 {
		i := slices.Index(f.garbage, slices.Max(f.garbage))
		if f.garbage[i] < minDiscard {
			break
		}
		f.garbage = slices.Delete(f.garbage, i, i+1)
		n++
	}
	return n, nil
}

func files(n int, share float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = share
	}
	return out
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
	db := &fakeGC{garbage: files(3, 0.6)}
	if n := tables.collectGarbageRound(db, rest); n != 3 || len(db.garbage) != 0 || rests != 3 || db.calls != 8 {
		t.Fatalf("round rewrote %d files in %d calls with %d rests, %d left; want 3 in 8 calls (a backlog probe, then one file each; then none at either share), 3 rests, 0 left",
			n, db.calls, rests, len(db.garbage))
	}

	db = &fakeGC{garbage: files(gcMaxFilesPerRound+5, 0.6)}
	if n := tables.collectGarbageRound(db, rest); n != gcMaxFilesPerRound || len(db.garbage) != 5 {
		t.Fatalf("a backlog round rewrote %d files, %d left; want the bound %d, 5 left", n, len(db.garbage), gcMaxFilesPerRound)
	}

	broken := &fakeGC{err: errors.New("disk on fire")}
	if n := tables.collectGarbageRound(broken, rest); n != 0 || broken.calls != 1 {
		t.Fatalf("a failing database: %d files, %d calls; want 0 and 1", n, broken.calls)
	}

	db = &fakeGC{garbage: files(5, 0.6)}
	if n := tables.collectGarbageRound(db, func(time.Duration) bool { return false }); n != 1 || len(db.garbage) != 4 {
		t.Fatalf("a refused rest let the round go on: %d files rewritten, %d left; want 1 and 4", n, len(db.garbage))
	}
}

// TestKVGarbageBacklogSkipsRests checks the pacing by garbage: files at
// least gcBacklogDiscard garbage (overwrites outrunning the collector) are
// rewritten back to back, the richest first; only those past the
// configured share alone get a rest after them.
func TestKVGarbageBacklogSkipsRests(t *testing.T) {
	tables := &Tables{log: slog.New(slog.DiscardHandler)}
	rests := 0
	rest := func(time.Duration) bool { rests++; return true }
	db := &fakeGC{garbage: []float64{0.55, 0.95, gcBacklogDiscard, 0.3, 0.8}}
	if n := tables.collectGarbageRound(db, rest); n != 4 || rests != 1 || !slices.Equal(db.garbage, []float64{0.3}) {
		t.Fatalf("round rewrote %d files with %d rests, left %v; want 4 files (three rich ones back to back, then 0.55 with a rest), 1 rest, [0.3] left",
			n, rests, db.garbage)
	}
	if db.asked[0] != gcBacklogDiscard || db.asked[len(db.asked)-1] != 0 {
		t.Fatalf("shares asked %v: want the backlog share first and the configured one (0) last", db.asked)
	}

	// A configured share above the backlog share is never undercut.
	strict := &Tables{log: slog.New(slog.DiscardHandler)}
	strict.cfg.DB.GCDiscardRatio = 0.9
	db = &fakeGC{garbage: []float64{0.8}}
	strict.collectGarbageRound(db, rest)
	if db.asked[0] != 0.9 {
		t.Fatalf("with GCDiscardRatio 0.9 the backlog probe asked for %v", db.asked[0])
	}
}
