package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sealedTemplate builds a closed log of n segments, one small batch each
// (rolled by age on a fake clock), to copy into many log folders.
func sealedTemplate(t testing.TB, n int) string {
	t.Helper()
	clock := newFakeClock()
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir, Sync: SyncNever, SegmentMaxAge: time.Minute, Now: clock.Now})
	for i := range n {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 20), 0)
		clock.Advance(time.Minute)
	}
	if got := len(l.Segments()); got != n {
		t.Fatalf("template has %d segments, want %d", got, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openFiles counts this process's file descriptors, and its memory
// mappings of files below dir; ok is false where /proc does not tell.
func openFiles(t testing.TB, dir string) (fds, maps int, ok bool) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	buf, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, 0, false
	}
	for line := range bytes.Lines(buf) {
		if bytes.Contains(line, []byte(dir)) {
			maps++
		}
	}
	return len(entries), maps, true
}

// TestManySealedSegmentsStayClosed: a node with 20,000 sealed segments
// opens with its files closed, and reading all of them keeps the open
// descriptors and mappings within the scheduler's bound: far below the
// default vm.max_map_count (65530) and a default descriptor limit.
func TestManySealedSegmentsStayClosed(t *testing.T) {
	const perLog, maxOpen, slack = 101, 64, 32
	logs := 200 // × 100 sealed segments
	if testing.Short() {
		logs = 20
	}
	tmpl := sealedTemplate(t, perLog)
	root := t.TempDir()
	fds0, maps0, ok := openFiles(t, root)
	if !ok {
		t.Skip("no /proc/self")
	}
	for i := range logs {
		dir := filepath.Join(root, fmt.Sprint(i))
		linkSealed(t, tmpl, dir)
	}
	s, err := NewScheduler(SchedulerConfig{MaxOpenSegments: maxOpen})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkBound := func(when string) {
		t.Helper()
		fds, maps, _ := openFiles(t, root)
		if open := s.segments.open(); open > maxOpen || fds-fds0 > maxOpen+slack || maps-maps0 > maxOpen+slack {
			t.Fatalf("%s: %d segments open (bound %d), %d more descriptors, %d more mappings",
				when, open, maxOpen, fds-fds0, maps-maps0)
		}
		t.Logf("%s: %d segments open, %d more descriptors, %d more mappings", when, s.segments.open(), fds-fds0, maps-maps0)
	}

	start := time.Now()
	opened := make([]*Log, logs)
	for i := range opened {
		opened[i] = openLog(t, Config{Dir: filepath.Join(root, fmt.Sprint(i)), Scheduler: s})
	}
	t.Logf("opened %d logs of %d segments in %v", logs, perLog, time.Since(start))
	checkBound("after open")
	for _, l := range opened {
		for _, seg := range (*l.segs.Load())[:perLog-1] {
			if seg.cur.Load() != nil {
				t.Fatalf("Open opened sealed segment %d", seg.base)
			}
		}
	}

	for _, l := range opened {
		if got, err := readAll(t, l, 0); err != nil || len(got) != perLog {
			t.Fatalf("read %d batches, want %d: %v", len(got), perLog, err)
		}
	}
	checkBound("after reading everything")
	for _, l := range opened {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if fds, maps, _ := openFiles(t, root); fds > fds0+slack || maps > maps0+slack {
		t.Fatalf("after Close: %d more descriptors, %d more mappings", fds-fds0, maps-maps0)
	}
}

// templateLogs opens n copies of a sealedTemplate of segments segments on
// one scheduler that keeps at most maxOpen segments open.
func templateLogs(t *testing.T, segments, n, maxOpen int) []*Log {
	t.Helper()
	tmpl := sealedTemplate(t, segments)
	s, err := NewScheduler(SchedulerConfig{MaxOpenSegments: maxOpen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // after the logs' cleanups: they were registered later
	var logs []*Log
	for range n {
		dir := t.TempDir()
		copyDir(t, tmpl, dir)
		logs = append(logs, openLog(t, Config{Dir: dir, Scheduler: s, SegmentMaxBytes: 64 << 10}))
	}
	return logs
}

// TestEvictionKeepsReadersMapping: a segment closed by the bound while a
// reader holds its bytes keeps them mapped until the reader releases, and
// opens again for the next read.
func TestEvictionKeepsReadersMapping(t *testing.T) {
	logs := templateLogs(t, 4, 2, 1)
	recs, err := logs[0].Read(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	held := bytes.Clone(recs.Data)
	if _, err := readAll(t, logs[1], 0); err != nil {
		t.Fatal(err)
	}
	if seg := (*logs[0].segs.Load())[0]; seg.cur.Load() != nil {
		t.Fatal("the bound of one open segment kept the first log's segment open")
	}
	if !bytes.Equal(recs.Data, held) {
		t.Fatal("a held view changed when its segment closed")
	}
	recs.Release()
	if got, err := readAll(t, logs[0], 0); err != nil || len(got) != 4 {
		t.Fatalf("reopened read: %d batches: %v", len(got), err)
	}
}

// TestConcurrentReadsUnderEviction: readers of many logs, a tight bound
// and an appender: every batch read is the one asked for, whole (run
// under -race, this checks the reference counting).
func TestConcurrentReadsUnderEviction(t *testing.T) {
	logs := templateLogs(t, 20, 6, 3)
	var wg sync.WaitGroup
	errs := make(chan error, 9)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				l := logs[rng.IntN(len(logs))]
				from := rng.Int64N(40)
				recs, err := l.Read(from, 1)
				if err != nil {
					errs <- err
					return
				}
				it := recs.Batches()
				if !it.Next() || it.Batch().BaseOffset() != from&^1 {
					errs <- fmt.Errorf("read %d: got batch %d", from, it.Batch().BaseOffset())
					return
				}
				recs.Release()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			if _, err := logs[0].Append(makeBatch(t, fmt.Sprint(i), 2, 1000), 1); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDamagedSealedSegmentFoundOnFirstRead: Open trusts sealed segments
// without reading them; damage to one is reported as corruption by the
// first read that reaches it (the batches before it are served), a
// truncation to the offset named drops it, and the suffix fetched again
// appends and survives a reopen. Bytes past a sealed segment's last batch
// are never served.
func TestDamagedSealedSegmentFoundOnFirstRead(t *testing.T) {
	const batches, perBatch = 60, 3
	for _, tc := range []struct {
		name string
		// damage changes the sealed segment file, whose batches are
		// batchBytes long, so that the 4th batch and after are gone.
		damage  func(t *testing.T, path string, batchBytes int64)
		corrupt bool
	}{
		{"cut-at-batch", func(t *testing.T, path string, n int64) { truncateFile(t, path, 3*n) }, true},
		{"cut-mid-batch", func(t *testing.T, path string, n int64) { truncateFile(t, path, 3*n+n/2) }, true},
		{"cut-mid-header", func(t *testing.T, path string, n int64) { truncateFile(t, path, 3*n+5) }, true},
		{"zeroed-tail", func(t *testing.T, path string, n int64) {
			st, _ := os.Stat(path)
			writeAt(t, path, make([]byte, st.Size()-3*n), 3*n)
		}, true},
		{"garbage-after-end", func(t *testing.T, path string, n int64) {
			st, _ := os.Stat(path)
			writeAt(t, path, bytes.Repeat([]byte("garbage!"), 100), st.Size())
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10}
			l := openLog(t, cfg)
			for i := range batches {
				mustAppend(t, l, makeBatch(t, fmt.Sprint(i), perBatch, 1000), 0)
			}
			peer, err := readAll(t, l, 0)
			if err != nil {
				t.Fatal(err)
			}
			seg := l.Segments()[1]
			if !seg.Sealed {
				t.Fatal("want a sealed second segment")
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			batchBytes := int64(len(peer[0]))
			tc.damage(t, segmentFile(dir, seg.BaseOffset), batchBytes)

			l2 := openLog(t, cfg)
			got, err := readAll(t, l2, 0)
			if !tc.corrupt {
				if err != nil || len(got) != len(peer) {
					t.Fatalf("read %d of %d batches: %v", len(got), len(peer), err)
				}
				checkBatchesEqual(t, l2, peer)
				return
			}
			damaged := seg.BaseOffset + 3*perBatch
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != damaged || ce.SegmentBase != seg.BaseOffset {
				t.Fatalf("want a *CorruptError at offset %d in segment %d, got %v", damaged, seg.BaseOffset, err)
			}
			if want := int(damaged / perBatch); len(got) != want {
				t.Fatalf("served %d batches before the damage, want %d", len(got), want)
			}
			repairFromPeer(t, l2, cfg, peer, ce.Offset, perBatch)
		})
	}
}

// linkSealed makes dst a copy of the log folder src whose sealed segments
// and indexes (never written again) are hard links: thousands of copies
// cost no disk.
func linkSealed(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	segs, err := ListSegments(src)
	if err != nil {
		t.Fatal(err)
	}
	active := segmentName(segs[len(segs)-1].BaseOffset)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if _, err := strconv.ParseInt(strings.Split(e.Name(), ".")[0], 10, 64); err != nil || strings.HasPrefix(e.Name(), active) {
			copyFile(t, from, to)
		} else if err := os.Link(from, to); err != nil {
			t.Fatal(err)
		}
	}
}

func truncateFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, path string, b []byte, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}
