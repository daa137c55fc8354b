package logstore

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestResetRacingReaders: a reader that runs while Reset removes the old
// segments (stopped right after their files are renamed away) gets an
// answer it can act on, never an error about a missing file: a read of
// the old range is out of range, a segment it picked before the reset is
// gone (so it reloads the list), a timestamp lookup finds nothing, and a
// view taken before the reset keeps its bytes.
func TestResetRacingReaders(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10}
	l := openLog(t, cfg)
	fillSegments(t, l, 3)
	l.Close()
	l = openLog(t, cfg) // sealed segments unopened: a read must open the file
	segs := *l.segs.Load()
	held, err := l.Read(0, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(held.Data)
	picked := segs[1] // never read: its next acquire opens the file

	const resetTo = 1 << 20
	ran := false
	l.hooks.resetRenamed = func() {
		ran = true
		for _, read := range []struct {
			name string
			read func() (*Records, error)
		}{
			{"Read", func() (*Records, error) { return l.Read(picked.base, 1<<10) }},
			{"ReadUnflushed", func() (*Records, error) { return l.ReadUnflushed(picked.base, resetTo, 1<<10) }},
		} {
			if recs, err := read.read(); !errors.Is(err, ErrOffsetOutOfRange) {
				if recs != nil {
					recs.Release()
				}
				t.Errorf("%s of the old range during Reset: %v, want %v", read.name, err, ErrOffsetOutOfRange)
			}
		}
		if recs, err := l.Read(resetTo, 1<<10); err != nil {
			t.Errorf("Read at the new start during Reset: %v", err)
		} else if len(recs.Data) != 0 {
			t.Errorf("Read at the new start during Reset: %d bytes", len(recs.Data))
		}
		if m, err := picked.acquire(); !errors.Is(err, errSegmentGone) {
			if m != nil {
				m.release()
			}
			t.Errorf("acquiring a segment picked before Reset: %v, want %v", err, errSegmentGone)
		}
		if _, found, err := l.OffsetForTimestamp(0); err != nil || found {
			t.Errorf("OffsetForTimestamp during Reset: %v, %v", found, err)
		}
	}
	if err := l.Reset(resetTo); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the hook did not run")
	}
	if !bytes.Equal(held.Data, want) {
		t.Fatal("a view taken before Reset changed")
	}
	held.Release()
}

// TestResetConcurrentReaders: readers tailing a log while it is reset (run
// under -race) see only batches or out of range, and find the new start.
// The reset waits, in the window its hook opens, until every reader has
// read again.
func TestResetConcurrentReaders(t *testing.T) {
	sched, err := NewScheduler(SchedulerConfig{MaxOpenSegments: 1}) // every segment switch opens a file
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, Scheduler: sched})
	fillSegments(t, l, 4)
	const readers, resetTo = 4, 1 << 20
	var done atomic.Bool
	progress := make([]atomic.Int64, readers)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for from := int64(0); !done.Load(); progress[r].Add(1) {
				recs, err := l.Read(from, 4<<10)
				switch {
				case errors.Is(err, ErrOffsetOutOfRange):
					from = l.StartOffset()
				case err != nil:
					t.Errorf("reader %d at %d: %v", r, from, err)
					return
				default:
					from = recs.NextOffset
					if from >= l.EndOffset() {
						from = 0 // read the old log again until the reset
					}
					recs.Release()
				}
			}
		})
	}
	l.hooks.resetRenamed = func() {
		var seen [readers]int64
		for r := range readers {
			seen[r] = progress[r].Load()
		}
		for r := range readers {
			waitFor(t, "a reader's read during Reset", func() bool { return progress[r].Load() > seen[r]+1 || t.Failed() })
		}
	}
	if err := l.Reset(resetTo); err != nil {
		t.Fatal(err)
	}
	done.Store(true)
	wg.Wait()
	if l.StartOffset() != resetTo {
		t.Fatalf("start %d after reset", l.StartOffset())
	}
}

// TestPowerLossDuringReset: a power cut once Reset has renamed every old
// segment away, before the new one exists, leaves an empty log; its
// durable mark, lowered on disk first, does not call that a lost tail.
func TestPowerLossDuringReset(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	l := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10, RecoveryPointInterval: time.Hour, FsyncFault: pl.fsync})
	fillSegments(t, l, 2)
	pl.follow(l)
	var images []string
	l.hooks.resetRenamed = func() { images = pl.images() }
	if err := l.Reset(1 << 20); err != nil {
		t.Fatal(err)
	}
	if len(images) == 0 {
		t.Fatal("no power-cut image taken")
	}
	for _, img := range images {
		got, err := Open(Config{Dir: img, SegmentMaxBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		from, lost := got.LostTail()
		got.Close()
		if lost {
			t.Fatalf("a power cut during Reset reopened with a lost tail from %d", from)
		}
	}
}

// TestResetAtEnd: a log reset at its own end drops every batch and epoch
// and starts over empty there, across a reopen (a follower dropping the
// batches below its leader's start that the remote log holds); below the
// end is refused.
func TestResetAtEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10}
	l := openLog(t, cfg)
	fillSegments(t, l, 2)
	end := l.EndOffset()
	if e, ok := l.OldestEpoch(); !ok || e != 0 {
		t.Fatalf("oldest epoch %d, %v; want 0", e, ok)
	}
	if err := l.Reset(end - 1); err == nil {
		t.Fatal("a reset below the end was taken")
	}
	if err := l.Reset(end); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log) {
		t.Helper()
		if l.StartOffset() != end || l.EndOffset() != end {
			t.Fatalf("log [%d, %d), want empty at %d", l.StartOffset(), l.EndOffset(), end)
		}
		if _, ok := l.OldestEpoch(); ok {
			t.Fatal("an epoch survived the reset")
		}
	}
	check(l)
	l.Close()
	check(openLog(t, cfg))
}
