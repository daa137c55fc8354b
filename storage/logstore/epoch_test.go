package logstore

import (
	"fmt"
	"math"
	"testing"
)

func TestEpochCache(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	// Epoch 1: [0,10), epoch 3: [10,25), epoch 4: [25, end).
	for i := range 5 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 10), 1)
	}
	if err := l.AssignEpoch(3); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 3, 10), 3)
	}
	for i := range 2 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 4, 10), 4)
	}
	end := l.EndOffset()
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
		ok        bool
	}{
		{0, 0, 0, true}, // older than anything: ends where epoch 1 starts
		{1, 1, 10, true},
		{2, 1, 10, true}, // never led: the largest known below it
		{3, 3, 25, true},
		{4, 4, end, true},
		{5, 0, 0, false},
	} {
		e, off, ok := l.EndOffsetForEpoch(tc.epoch)
		if ok != tc.ok || (ok && (e != tc.wantEpoch || off != tc.wantEnd)) {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d, %v; want %d, %d, %v", tc.epoch, e, off, ok, tc.wantEpoch, tc.wantEnd, tc.ok)
		}
	}
	wantErr(t, l.AssignEpoch(2), ErrStaleEpoch)

	// Truncation takes the epoch cache along, and it persists.
	if err := l.Truncate(13); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(l.Epochs()); got != "[{1 0} {3 10}]" {
		t.Fatalf("epochs after truncate: %s", got)
	}
	if err := l.Truncate(10); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(l.Epochs()); got != "[{1 0}]" {
		t.Fatalf("epochs after truncate to epoch start: %s", got)
	}
	mustAppend(t, l, makeBatch(t, "x", 1, 10), 6)
	l.Close()
	l2 := openLog(t, Config{Dir: dir})
	if got := fmt.Sprint(l2.Epochs()); got != "[{1 0} {6 10}]" {
		t.Fatalf("epochs after reopen: %s", got)
	}
	if e, off, ok := l2.EndOffsetForEpoch(3); !ok || e != 1 || off != 10 {
		t.Fatalf("EndOffsetForEpoch(3) after truncation = %d, %d, %v", e, off, ok)
	}
}

// TestEpochRecoveredFromUncheckpointedTail: a crash right after a new epoch's
// first append could lose nothing of the epoch cache, because it is persisted
// before the append; and if the file were older, recovery reads epochs back
// from the batches it scans.
func TestEpochRecoveredFromScan(t *testing.T) {
	src, _, l := crashFixture(t, 3)
	_ = l
	dir := t.TempDir()
	copyDir(t, src, dir)
	// Drop the epoch file: the scan must bring epoch 0 back.
	if err := removeFile(dir, epochFile); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, Config{Dir: dir})
	if got := fmt.Sprint(l2.Epochs()); got != "[{0 0}]" {
		t.Fatalf("epochs rebuilt by the scan: %s", got)
	}
}

// TestTruncateAtEndDropsEmptyEpoch: a leader that assigned an epoch and
// appended nothing in it, then became a follower, forgets that epoch when
// it truncates at its end.
func TestTruncateAtEndDropsEmptyEpoch(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir()})
	mustAppend(t, l, makeBatch(t, "a", 2, 10), 4)
	if err := l.AssignEpoch(5); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.LatestEpoch(); e != 4 || l.EndOffset() != 2 {
		t.Fatalf("after truncating at the end: epoch %d, end %d", e, l.EndOffset())
	}
}

// TestReadUnflushed: under SyncAlways a written batch is readable through
// ReadUnflushed, and counts in WrittenEnd and the latest epoch's end, before
// the fsync that makes it visible to ReadBelow and EndOffset; a truncation
// takes it back from both.
func TestReadUnflushed(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), Sync: SyncAlways})
	mustAppend(t, l, makeBatch(t, "a", 3, 10), 1)
	info, wait, err := l.AppendPending(makeBatch(t, "b", 2, 10), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.EndOffset(); got != 3 {
		t.Fatalf("EndOffset before the fsync = %d, want 3", got)
	}
	if got := l.WrittenEnd(); got != 5 {
		t.Fatalf("WrittenEnd = %d, want 5", got)
	}
	if _, end, ok := l.EndOffsetForEpoch(1); !ok || end != 5 {
		t.Fatalf("end of epoch 1 = %d, %v; want the written end 5", end, ok)
	}
	recs, err := l.ReadBelow(3, math.MaxInt64, 1<<20)
	if err != nil || len(recs.Data) != 0 {
		t.Fatalf("ReadBelow saw %d bytes before the fsync (err %v)", len(recs.Data), err)
	}
	recs, err = l.ReadUnflushed(3, math.MaxInt64, 1<<20)
	if err != nil || recs.FirstOffset != info.BaseOffset || recs.NextOffset != 5 {
		t.Fatalf("ReadUnflushed = [%d, %d), %v; want the unflushed batch [3, 5)", recs.FirstOffset, recs.NextOffset, err)
	}
	recs.Release()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.EndOffset(); got != 5 {
		t.Fatalf("EndOffset after the fsync = %d, want 5", got)
	}
	if err := l.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if got := l.WrittenEnd(); got != 3 {
		t.Fatalf("WrittenEnd after truncating to 3 = %d", got)
	}
	if recs, err := l.ReadUnflushed(3, math.MaxInt64, 1<<20); err != nil || len(recs.Data) != 0 {
		t.Fatalf("ReadUnflushed after truncating to 3: %d bytes, %v", len(recs.Data), err)
	}
}
