package logstore

import (
	"fmt"
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
