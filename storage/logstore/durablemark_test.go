package logstore

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLostTailDetected: a log whose last durable batches vanished (the
// segment file cut short after a crash, as a disk that drops fsynced
// writes leaves it) opens with what it has and reports where the loss
// begins; a torn batch that was never durable, and a truncation, report
// nothing.
func TestLostTailDetected(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), Sync: SyncAlways})
	var infos []AppendInfo
	for i := range 4 {
		infos = append(infos, mustAppend(t, l, makeBatch(t, "a", 3, 50+i), 1))
	}
	crashed := crashCopy(t, l)
	last := infos[len(infos)-1]
	seg := segmentFile(crashed, 0)
	size := segmentBytes(t, l, last)
	if err := os.Truncate(seg, size-5); err != nil { // inside the last, acknowledged batch
		t.Fatal(err)
	}
	got := openLog(t, Config{Dir: crashed})
	if from, lost := got.LostTail(); !lost || from != last.BaseOffset {
		t.Fatalf("LostTail() = %d, %v; want the last batch's offset %d", from, lost, last.BaseOffset)
	}
	if end := got.EndOffset(); end != last.BaseOffset {
		t.Fatalf("end offset %d, want %d", end, last.BaseOffset)
	}

	// A clean log, and one truncated on purpose, have lost nothing.
	if _, lost := l.LostTail(); lost {
		t.Fatal("the log that was written reports a lost tail")
	}
	if err := l.Truncate(infos[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, Config{Dir: crashCopy(t, l)})
	if from, lost := again.LostTail(); lost {
		t.Fatalf("a truncated log reports a lost tail from %d", from)
	}

	// Batches past the last fsync may be torn by a crash: no loss.
	unsynced := openLog(t, Config{Dir: t.TempDir(), Sync: SyncNever})
	mustAppend(t, unsynced, makeBatch(t, "b", 3, 50), 1)
	if err := unsynced.Sync(); err != nil {
		t.Fatal(err)
	}
	tail := mustAppend(t, unsynced, makeBatch(t, "b", 3, 60), 1)
	torn := crashCopy(t, unsynced)
	if err := os.Truncate(segmentFile(torn, 0), segmentBytes(t, unsynced, tail)-5); err != nil {
		t.Fatal(err)
	}
	reopened := openLog(t, Config{Dir: torn})
	if from, lost := reopened.LostTail(); lost || reopened.EndOffset() != tail.BaseOffset {
		t.Fatalf("a torn batch that was never durable: LostTail() = %d, %v, end %d", from, lost, reopened.EndOffset())
	}
}

// segmentBytes is the size of the segment holding the batch, up to its
// end, as the open log l has it.
func segmentBytes(t *testing.T, l *Log, last AppendInfo) int64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active.base != 0 {
		t.Fatalf("the batches span segments (active at %d)", l.active.base)
	}
	return l.active.size
}

// TestDurableMarkFilesBounded: the logs of one scheduler keep at most
// openMarkFiles mark files open between writes, the least recently
// written closed first; a mark whose file was closed, or whose log
// closed, still reads back as last written, and nothing stays open after
// the logs close. Many logs setting their marks at once share the set
// safely (run with -race).
func TestDurableMarkFilesBounded(t *testing.T) {
	sched, err := NewScheduler(SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	const logs = openMarkFiles + 40
	dirs := make([]string, logs)
	ls := make([]*Log, logs)
	for i := range ls {
		dirs[i] = t.TempDir()
		ls[i] = openLog(t, Config{Dir: dirs[i], Sync: SyncAlways, Scheduler: sched})
	}
	openMarks := func() int {
		n := 0
		for _, l := range ls {
			l.mark.mu.Lock()
			if l.mark.f != nil {
				n++
			}
			l.mark.mu.Unlock()
		}
		return n
	}
	var wg sync.WaitGroup
	for round := range 3 {
		for i, l := range ls {
			wg.Go(func() {
				if _, err := l.Append(makeBatch(t, fmt.Sprint(i), 1, 10+round), 0); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := openMarks(); n > openMarkFiles {
			t.Fatalf("round %d: %d mark files open, bound %d", round, n, openMarkFiles)
		}
	}
	// Concurrent sets may leave a mark listed whose file an eviction
	// closed just after its log wrote: never over the bound, perhaps
	// under. Written in turn, the last openMarkFiles logs hold their
	// files and the earlier ones do not.
	for i, l := range ls {
		if _, err := l.Append(makeBatch(t, fmt.Sprint(i), 1, 20), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range ls {
		l.mark.mu.Lock()
		open := l.mark.f != nil
		l.mark.mu.Unlock()
		if want := i >= logs-openMarkFiles; open != want {
			t.Fatalf("log %d of %d written in turn: mark file open %v, want %v", i, logs, open, want)
		}
	}
	for i, l := range ls {
		end := l.EndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		m, at, err := openDurableMark(dirs[i], newMarkFiles(1))
		if err != nil || at != end {
			t.Fatalf("log %d: mark reads %d (%v), want its end %d", i, at, err, end)
		}
		m.close()
	}
	if n := openMarks(); n != 0 {
		t.Fatalf("%d mark files open after every log closed", n)
	}
	if n := sched.marks.lru.Len(); n != 0 {
		t.Fatalf("%d marks still listed after every log closed", n)
	}
}

// TestPowerLossAfterTruncate: a truncation lowers the durable mark, and a
// power cut at any point after it (while the cut is being synced, or after
// new batches were appended, some not yet synced) leaves a mark no higher
// than the log the disk holds: reopening reports no lost tail, and keeps
// every batch that was durable and not truncated.
func TestPowerLossAfterTruncate(t *testing.T) {
	dir := t.TempDir()
	pl := newPowerLoss(t, dir)
	var cutting atomic.Bool
	var duringCut []string
	l := openLog(t, Config{Dir: dir, Sync: SyncAlways, RecoveryPointInterval: time.Hour,
		FsyncFault: func(base int64) error {
			if cutting.Load() {
				// The cut is written, not yet synced.
				duringCut = append(duringCut, pl.images()...)
			}
			return pl.fsync(base)
		}})
	var infos []AppendInfo
	for i := range 4 {
		infos = append(infos, mustAppend(t, l, makeBatch(t, "old", 3, 40+i), 1))
	}
	pl.follow(l) // the mark, at the end of the fourth batch, is on disk
	to := infos[2].BaseOffset
	cutting.Store(true)
	if err := l.Truncate(to); err != nil {
		t.Fatal(err)
	}
	cutting.Store(false)
	if len(duringCut) == 0 {
		t.Fatal("the truncation synced nothing")
	}
	check := func(when string, images []string, wantEnd int64) {
		t.Helper()
		for _, img := range images {
			got, err := Open(Config{Dir: img})
			if err != nil {
				t.Fatalf("%s: open: %v", when, err)
			}
			from, lost := got.LostTail()
			end := got.EndOffset()
			got.Close()
			if lost {
				t.Fatalf("%s: reopened with a lost tail from %d (end %d): the truncated batches were never lost", when, from, end)
			}
			if end < wantEnd {
				t.Fatalf("%s: reopened ending at %d, want at least %d", when, end, wantEnd)
			}
		}
	}
	check("power cut while the truncation syncs", duringCut, to)
	check("power cut after the truncation", pl.images(), to)

	again := mustAppend(t, l, makeBatch(t, "new", 3, 50), 2)
	if _, _, err := l.AppendPending(makeBatch(t, "unsynced", 3, 50), 2); err != nil {
		t.Fatal(err)
	}
	check("power cut after appending again", pl.images(), again.LastOffset+1)
}
