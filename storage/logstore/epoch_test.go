package logstore

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"
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

	// EpochBefore names the epoch of the batch ending at an offset; an epoch
	// assigned with nothing written in it is not that epoch.
	if err := l.AssignEpoch(7); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		offset int64
		want   int32
	}{{0, -1}, {1, 1}, {10, 1}, {11, 3}, {25, 3}, {26, 4}, {end, 4}} {
		if got := l.EpochBefore(tc.offset); got != tc.want {
			t.Errorf("EpochBefore(%d) = %d, want %d", tc.offset, got, tc.want)
		}
	}

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

// TestLatestEpochSurvivesReopen: the newest epoch assigned to a log survives
// a reopen when it has no batch yet, and a crash that loses every batch of
// it (and part of the epoch before); the epochs whose batches are all lost
// go, and the end offsets of the epochs left say where each now ends.
func TestLatestEpochSurvivesReopen(t *testing.T) {
	t.Run("assigned without batches", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, Config{Dir: dir})
		mustAppend(t, l, makeBatch(t, "a", 3, 40), 1)
		if err := l.AssignEpoch(4); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2 := openLog(t, Config{Dir: dir})
		if got := fmt.Sprint(l2.Epochs()); got != "[{1 0} {4 3}]" {
			t.Fatalf("epochs after reopen: %s", got)
		}
		if e, ok := l2.LatestEpoch(); !ok || e != 4 {
			t.Fatalf("latest epoch after reopen: %d, %v", e, ok)
		}
	})

	// Epoch 1 holds [0, 9), epoch 2 [9, 18), epoch 3 [18, 27); a crash
	// cuts the segment file at the batch holding cut.
	for _, tc := range []struct {
		cut    int64
		epochs string
		ends   map[int32][2]int64 // asked epoch → found epoch, end offset
	}{
		{27, "[{1 0} {2 9} {3 18}]", map[int32][2]int64{1: {1, 9}, 2: {2, 18}, 3: {3, 27}}},
		{18, "[{1 0} {2 9} {3 18}]", map[int32][2]int64{1: {1, 9}, 2: {2, 18}, 3: {3, 18}}},
		{12, "[{1 0} {2 9} {3 12}]", map[int32][2]int64{1: {1, 9}, 2: {2, 12}, 3: {3, 12}}},
		{6, "[{1 0} {3 6}]", map[int32][2]int64{1: {1, 6}, 2: {1, 6}, 3: {3, 6}}},
		{0, "[{3 0}]", map[int32][2]int64{1: {1, 0}, 2: {2, 0}, 3: {3, 0}}},
	} {
		t.Run(fmt.Sprint("crash at ", tc.cut), func(t *testing.T) {
			l := openLog(t, Config{Dir: t.TempDir(), RecoveryPointInterval: time.Hour})
			var pos []int64 // byte position of each batch, by index
			var size int64
			for i := range 9 {
				b := makeBatch(t, fmt.Sprint(i), 3, 40)
				pos = append(pos, size)
				size += int64(len(b))
				mustAppend(t, l, b, int32(1+i/3))
			}
			pos = append(pos, size)
			dir := crashCopy(t, l)
			if err := os.Truncate(segmentFile(dir, 0), pos[tc.cut/3]); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, Config{Dir: dir})
			if l2.EndOffset() != tc.cut {
				t.Fatalf("recovered end %d, want %d", l2.EndOffset(), tc.cut)
			}
			if got := fmt.Sprint(l2.Epochs()); got != tc.epochs {
				t.Fatalf("epochs after the crash: %s, want %s", got, tc.epochs)
			}
			if e, ok := l2.LatestEpoch(); !ok || e != 3 {
				t.Fatalf("latest epoch after the crash: %d, %v; want 3", e, ok)
			}
			for asked, want := range tc.ends {
				if e, end, ok := l2.EndOffsetForEpoch(asked); !ok || e != int32(want[0]) || end != want[1] {
					t.Errorf("EndOffsetForEpoch(%d) = %d, %d, %v; want %d, %d", asked, e, end, ok, want[0], want[1])
				}
			}
			// The log goes on in epoch 3; epoch 2 is stale.
			_, err := l2.Append(makeBatch(t, "stale", 1, 10), 2)
			wantErr(t, err, ErrStaleEpoch)
			if info := mustAppend(t, l2, makeBatch(t, "next", 1, 10), 3); info.BaseOffset != tc.cut {
				t.Fatalf("append after the crash at %d, want %d", info.BaseOffset, tc.cut)
			}
		})
	}

	t.Run("sync failure", func(t *testing.T) {
		disk := newFlakyDisk()
		dir := t.TempDir()
		l := openLog(t, Config{Dir: dir, FsyncFault: disk.fault})
		durableEnd := appendDurable(t, l, 2)
		disk.armed.Store(true)
		_, err := l.Append(makeBatch(t, "lost", 3, 40), 7)
		wantSyncFailure(t, "append", err)
		l.crash()
		l2 := openLog(t, Config{Dir: dir})
		if l2.EndOffset() != durableEnd {
			t.Fatalf("recovered end %d, want %d", l2.EndOffset(), durableEnd)
		}
		if got, want := fmt.Sprint(l2.Epochs()), fmt.Sprintf("[{0 0} {7 %d}]", durableEnd); got != want {
			t.Fatalf("epochs after recovering a failed log: %s, want %s", got, want)
		}
	})
}
