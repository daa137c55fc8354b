package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
)

// crashFixture appends n batches to a log whose recovery point is never
// checkpointed after open, and returns a crash copy plus each batch's start
// position in the (single) segment.
func crashFixture(t *testing.T, n int) (dir string, positions []int64, l *Log) {
	t.Helper()
	l = openLog(t, Config{Dir: t.TempDir(), RecoveryPointInterval: time.Hour, PreallocateBytes: 1 << 20})
	var pos int64
	for i := range n {
		b := makeBatch(t, fmt.Sprint(i), 3, 40)
		mustAppend(t, l, b, 0)
		positions = append(positions, pos)
		pos += int64(len(b))
	}
	positions = append(positions, pos)
	return crashCopy(t, l), positions, l
}

// checkPrefix opens dir and checks it holds exactly the first n batches of 3
// records each, and that it takes appends again.
func checkPrefix(t *testing.T, dir string, n int) {
	t.Helper()
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatalf("recovery failed: %v", err)
	}
	defer l.Close()
	if l.EndOffset() != int64(3*n) {
		t.Fatalf("recovered end %d, want %d", l.EndOffset(), 3*n)
	}
	batches, err := readAll(t, l, 0)
	if err != nil || len(batches) != n {
		t.Fatalf("recovered %d batches, want %d: %v", len(batches), n, err)
	}
	info := mustAppend(t, l, makeBatch(t, "after", 3, 40), 1)
	if info.BaseOffset != int64(3*n) {
		t.Fatalf("append after recovery at %d", info.BaseOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A second open sees the recovered log plus the new batch, nothing stale.
	l2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got, err := readAll(t, l2, 0); err != nil || len(got) != n+1 {
		t.Fatalf("reopen after recovery: %d batches: %v", len(got), err)
	}
}

func TestCrashCutEveryByteOfLastBatch(t *testing.T) {
	src, pos, _ := crashFixture(t, 5)
	last, end := pos[4], pos[5]
	for cut := last; cut < end; cut++ {
		t.Run(fmt.Sprint(cut-last), func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			if err := os.Truncate(segmentFile(dir, 0), cut); err != nil {
				t.Fatal(err)
			}
			checkPrefix(t, dir, 4)
		})
	}
}

func TestCrashZeroedTail(t *testing.T) {
	src, pos, _ := crashFixture(t, 5)
	for _, from := range []int64{pos[4], pos[4] + 7, pos[4] + record.HeaderSize, pos[5] - 1} {
		dir := t.TempDir()
		copyDir(t, src, dir)
		f, err := os.OpenFile(segmentFile(dir, 0), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(make([]byte, pos[5]-from), from); err != nil {
			t.Fatal(err)
		}
		f.Close()
		checkPrefix(t, dir, 4)
	}
}

func TestCrashGarbageAfterEnd(t *testing.T) {
	src, pos, _ := crashFixture(t, 5)
	for name, garbage := range map[string][]byte{
		"random": []byte("\x13\x37garbage that is no batch at all........................................................"),
		"ones":   bytesOf(0xff, 200),
		"valid-looking": func() []byte { // a whole valid batch at the wrong offset
			b := makeBatch(t, "stale", 3, 40)
			b.SetBaseOffset(999)
			return b
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, src, dir)
			f, err := os.OpenFile(segmentFile(dir, 0), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(garbage, pos[5]); err != nil {
				t.Fatal(err)
			}
			f.Close()
			checkPrefix(t, dir, 5)
		})
	}
}

func TestCrashFlippedBitInUncheckpointedTail(t *testing.T) {
	// Past the recovery point a bad CRC is a torn write: cut from there.
	src, pos, _ := crashFixture(t, 5)
	dir := t.TempDir()
	copyDir(t, src, dir)
	flipBit(t, segmentFile(dir, 0), pos[2]+record.HeaderSize+3)
	checkPrefix(t, dir, 2)
}

func TestCorruptSealedSegmentIsReported(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10}
	l := openLog(t, cfg)
	var sizes []int
	for i := range 60 {
		b := makeBatch(t, fmt.Sprint(i), 3, 1000)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b, 0)
	}
	if len(l.Segments()) < 2 {
		t.Fatal("want a sealed segment")
	}
	l.Close()
	// Flip a payload bit in the 6th batch of the first (sealed) segment.
	flipBit(t, segmentFile(dir, 0), int64(5*sizes[0])+record.HeaderSize+10)

	l2 := openLog(t, cfg) // opening does not scan sealed segments
	batches, err := readAll(t, l2, 0)
	wantErr(t, err, ErrCorrupt)
	if len(batches) != 5 {
		t.Fatalf("served %d batches before the damage, want exactly 5", len(batches))
	}
	// Reading right at the damaged batch is refused, never skipped.
	_, err = l2.Read(15, 1<<20)
	wantErr(t, err, ErrCorrupt)
	// Later batches are still served.
	if _, err := readAll(t, l2, 18); err != nil {
		t.Fatalf("batches after the damage: %v", err)
	}
	if l2.EndOffset() != 180 {
		t.Fatalf("corruption truncated the log: end %d", l2.EndOffset())
	}
}

func TestCorruptHeaderBelowRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	var sizes []int
	for i := range 5 {
		b := makeBatch(t, fmt.Sprint(i), 3, 40)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b, 0)
	}
	l.Close() // checkpoints the recovery point at the end
	// Damage the length field of batch 2: the header walk below the
	// recovery point must report it, not cut the log there.
	flipBit(t, segmentFile(dir, 0), int64(2*sizes[0])+8)
	_, err := Open(Config{Dir: dir})
	wantErr(t, err, ErrCorrupt)
}

func TestIndexRebuild(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10, IndexIntervalBytes: 1024}
	l := openLog(t, cfg)
	for i := range 100 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 700), 0)
	}
	want, _ := readAll(t, l, 0)
	segs := l.Segments()
	l.Close()
	// Remove one segment's index, damage another's.
	os.Remove(filepath.Join(dir, segmentName(segs[0].BaseOffset)+indexSuffix))
	flipBit(t, filepath.Join(dir, segmentName(segs[1].BaseOffset)+timeIndexSuffix), 20)

	l2 := openLog(t, cfg)
	got, err := readAll(t, l2, 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("after index rebuild: %d of %d batches: %v", len(got), len(want), err)
	}
	for _, s := range segs[:2] {
		if _, err := os.Stat(filepath.Join(dir, segmentName(s.BaseOffset)+indexSuffix)); err != nil {
			t.Fatalf("index not rewritten: %v", err)
		}
	}
	// Random offsets land on the right batch through the rebuilt index.
	for _, off := range []int64{0, 1, 37, 120, 199} {
		recs, err := l2.Read(off, 1)
		if err != nil || off < recs.FirstOffset || off >= recs.NextOffset {
			t.Fatalf("read %d: [%d,%d) %v", off, recs.FirstOffset, recs.NextOffset, err)
		}
		recs.Release()
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func flipBit(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// TestCrashRecoverySyncsTheTail: batches past the recovery point that a
// crashed process left in the page cache are fsynced before the reopened
// log counts them durable; a log closed cleanly syncs nothing on open.
func TestCrashRecoverySyncsTheTail(t *testing.T) {
	dir, _, _ := crashFixture(t, 4)
	fsyncs := 0
	count := func(int64) error { fsyncs++; return nil }
	l, err := Open(Config{Dir: dir, FsyncFault: count})
	if err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 12 || fsyncs == 0 {
		t.Fatalf("recovered end %d after %d fsyncs: the tail past the recovery point was counted durable unsynced", l.EndOffset(), fsyncs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fsyncs = 0
	l, err = Open(Config{Dir: dir, FsyncFault: count})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fsyncs != 0 {
		t.Fatalf("reopening a cleanly closed log made %d fsyncs, want 0", fsyncs)
	}
}

// TestCachedRecoveryPointMadeDurableOnClose: the periodic checkpoint leaves
// the recovery point to the page cache; a durable write of the same
// position (Close, roll) must not count it done.
func TestCachedRecoveryPointMadeDurableOnClose(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), RecoveryPointInterval: time.Hour})
	mustAppend(t, l, makeBatch(t, "a", 3, 40), 0)
	if err := l.checkpointRecoveryPoint(false); err != nil {
		t.Fatal(err)
	}
	rp, err := l.readRecoveryPoint()
	if err != nil || rp.offset != 3 {
		t.Fatalf("cached recovery point %+v, %v; want offset 3", rp, err)
	}
	// Stands for the cached file lost in a power cut.
	if err := os.Remove(filepath.Join(l.Dir(), recoveryPointFile)); err != nil {
		t.Fatal(err)
	}
	if err := l.checkpointRecoveryPoint(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), recoveryPointFile)); err == nil {
		t.Fatal("a second cached checkpoint of an unchanged position wrote the file again")
	}
	if err := l.writeRecoveryPoint(); err != nil {
		t.Fatal(err)
	}
	if rp, err := l.readRecoveryPoint(); err != nil || rp.offset != 3 {
		t.Fatalf("durable recovery point after a cached one: %+v, %v; want offset 3", rp, err)
	}
}
