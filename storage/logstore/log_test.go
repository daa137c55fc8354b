package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var policies = []SyncPolicy{SyncAlways, SyncInterval, SyncNever}

// TestLogContract runs the same behaviour against every sync policy.
func TestLogContract(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			t.Run("AppendRead", func(t *testing.T) { testAppendRead(t, p) })
			t.Run("RollAndReopen", func(t *testing.T) { testRollAndReopen(t, p) })
			t.Run("ReadLimits", func(t *testing.T) { testReadLimits(t, p) })
			t.Run("Truncate", func(t *testing.T) { testTruncate(t, p) })
		})
	}
}

func testAppendRead(t *testing.T, p SyncPolicy) {
	l := openLog(t, Config{Dir: t.TempDir(), Sync: p})
	var next int64
	for i := range 20 {
		info := mustAppend(t, l, makeBatch(t, fmt.Sprint(i), i%4+1, 100), 1)
		if info.BaseOffset != next || info.LastOffset != next+int64(i%4) {
			t.Fatalf("append %d got offsets [%d, %d], want base %d", i, info.BaseOffset, info.LastOffset, next)
		}
		next = info.LastOffset + 1
	}
	if l.EndOffset() != next || l.StartOffset() != 0 {
		t.Fatalf("end %d start %d, want end %d", l.EndOffset(), l.StartOffset(), next)
	}
	batches, err := readAll(t, l, 0)
	if err != nil || len(batches) != 20 {
		t.Fatalf("read %d batches: %v", len(batches), err)
	}
	for i, b := range batches {
		if b.LeaderEpoch() != 1 || b.RecordCount() != int32(i%4+1) {
			t.Fatalf("batch %d: epoch %d count %d", i, b.LeaderEpoch(), b.RecordCount())
		}
	}
	// An offset inside a batch returns that whole batch.
	recs, err := l.Read(batches[3].BaseOffset()+1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer recs.Release()
	if recs.FirstOffset != batches[3].BaseOffset() || recs.NextOffset != batches[3].NextOffset() {
		t.Fatalf("read inside batch: [%d, %d), want batch at %d", recs.FirstOffset, recs.NextOffset, batches[3].BaseOffset())
	}
	// At the end: empty; past it or before the start: out of range.
	empty, err := l.Read(next, 100)
	if err != nil || len(empty.Data) != 0 || empty.NextOffset != next {
		t.Fatalf("read at end: %v %+v", err, empty)
	}
	_, err = l.Read(next+1, 100)
	wantErr(t, err, ErrOffsetOutOfRange)
	_, err = l.Read(-1, 100)
	wantErr(t, err, ErrOffsetOutOfRange)
}

func testRollAndReopen(t *testing.T, p SyncPolicy) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Sync: p, SegmentMaxBytes: 64 << 10, IndexIntervalBytes: 1024}
	l := openLog(t, cfg)
	for i := range 100 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 4, 500), int32(1+i/50))
	}
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("expected several segments, got %d", len(segs))
	}
	for i, s := range segs[:len(segs)-1] {
		if !s.Sealed || s.NextOffset != segs[i+1].BaseOffset || s.Bytes > cfg.SegmentMaxBytes {
			t.Fatalf("segment %d: %+v", i, s)
		}
		if _, err := os.Stat(filepath.Join(dir, segmentName(s.BaseOffset)+indexSuffix)); err != nil {
			t.Fatalf("sealed segment without index: %v", err)
		}
	}
	end := l.EndOffset()
	before, err := readAll(t, l, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, cfg)
	if l2.EndOffset() != end {
		t.Fatalf("reopened end %d, want %d", l2.EndOffset(), end)
	}
	after, err := readAll(t, l2, 0)
	if err != nil || len(after) != len(before) {
		t.Fatalf("reopened read %d of %d batches: %v", len(after), len(before), err)
	}
	for i := range before {
		if string(before[i]) != string(after[i]) {
			t.Fatalf("batch %d differs after reopen", i)
		}
	}
	if got := l2.Epochs(); len(got) != 2 || got[1].Epoch != 2 || got[1].StartOffset != 200 {
		t.Fatalf("epochs after reopen: %+v", got)
	}
	// Appends continue after the reopen.
	info := mustAppend(t, l2, makeBatch(t, "more", 1, 10), 2)
	if info.BaseOffset != end {
		t.Fatalf("append after reopen at %d, want %d", info.BaseOffset, end)
	}
}

func testReadLimits(t *testing.T, p SyncPolicy) {
	l := openLog(t, Config{Dir: t.TempDir(), Sync: p})
	for i := range 10 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 1000), 0)
	}
	one := len(makeBatch(t, "0", 2, 1000))
	recs, err := l.Read(0, 3*one)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Data) != 3*one || recs.NextOffset != 6 {
		t.Fatalf("maxBytes 3 batches: %d bytes, next %d", len(recs.Data), recs.NextOffset)
	}
	recs.Release()
	// Smaller than one batch still returns one.
	recs, err = l.Read(0, 1)
	if err != nil || recs.NextOffset != 2 {
		t.Fatalf("tiny maxBytes: %v next %d", err, recs.NextOffset)
	}
	recs.Release()
	// A limit (high watermark) inside the log.
	recs, err = l.ReadBelow(0, 8, 1<<20)
	if err != nil || recs.NextOffset != 8 {
		t.Fatalf("below 8: %v next %d", err, recs.NextOffset)
	}
	recs.Release()
	recs, err = l.ReadBelow(8, 8, 1<<20)
	if err != nil || len(recs.Data) != 0 {
		t.Fatalf("at the limit: %v %d bytes", err, len(recs.Data))
	}
}

func testTruncate(t *testing.T, p SyncPolicy) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Sync: p, SegmentMaxBytes: 64 << 10, IndexIntervalBytes: 512}
	l := openLog(t, cfg)
	for i := range 60 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 2, 1000), int32(i/20))
	}
	// Epochs 0 [0,40), 1 [40,80), 2 [80,120).
	if got := len(l.Segments()); got < 2 {
		t.Fatalf("want several segments, got %d", got)
	}
	if err := l.Truncate(51); err != nil { // inside batch [50,52): it goes too
		t.Fatal(err)
	}
	if l.EndOffset() != 50 {
		t.Fatalf("end after truncate %d, want 50", l.EndOffset())
	}
	if e, ok := l.LatestEpoch(); !ok || e != 1 {
		t.Fatalf("latest epoch after truncate: %d %v", e, ok)
	}
	batches, err := readAll(t, l, 0)
	if err != nil || len(batches) != 25 {
		t.Fatalf("after truncate read %d batches: %v", len(batches), err)
	}
	// New appends at a new epoch, then reopen: the old tail never returns.
	mustAppend(t, l, makeBatch(t, "new", 3, 10), 5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, cfg)
	batches, err = readAll(t, l2, 0)
	if err != nil || len(batches) != 26 || l2.EndOffset() != 53 {
		t.Fatalf("reopened after truncate: %d batches, end %d: %v", len(batches), l2.EndOffset(), err)
	}
	if last := batches[25]; last.LeaderEpoch() != 5 || last.BaseOffset() != 50 {
		t.Fatalf("last batch epoch %d base %d", last.LeaderEpoch(), last.BaseOffset())
	}
	wantErr(t, l2.Truncate(-1), ErrOffsetOutOfRange)
	if err := l2.Truncate(0); err != nil || l2.EndOffset() != 0 || len(l2.Segments()) != 1 {
		t.Fatalf("truncate to 0: %v end %d segments %d", err, l2.EndOffset(), len(l2.Segments()))
	}
}

func TestRollOnAge(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxAge: time.Hour, Now: clock.Now})
	mustAppend(t, l, makeBatch(t, "a", 1, 10), 0)
	clock.Advance(59 * time.Minute)
	mustAppend(t, l, makeBatch(t, "b", 1, 10), 0)
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("rolled too early: %d segments", n)
	}
	clock.Advance(time.Minute)
	mustAppend(t, l, makeBatch(t, "c", 1, 10), 0)
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != 2 {
		t.Fatalf("segments after an hour: %+v", segs)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), Now: clock.Now, SegmentMaxBytes: 64 << 10, IndexIntervalBytes: 256})
	start := clock.Now().UnixMilli()
	for i := range 200 {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 300), 0)
		clock.Advance(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		ts   int64
		want int64
		ok   bool
	}{
		{start - 1000, 0, true},
		{start, 0, true},
		{start + 1, 1, true},
		{start + 10, 1, true},
		{start + 1005, 101, true},
		{start + 1990, 199, true},
		{start + 1991, 0, false},
	} {
		got, ok, err := l.OffsetForTimestamp(tc.ts)
		if err != nil || ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("OffsetForTimestamp(start%+d) = %d, %v, %v; want %d, %v", tc.ts-start, got, ok, err, tc.want, tc.ok)
		}
	}
}

func TestTimestampsMonotonic(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), Now: clock.Now})
	a := mustAppend(t, l, makeBatch(t, "a", 1, 10), 0)
	clock.Advance(-time.Minute) // the wall clock steps back
	b := mustAppend(t, l, makeBatch(t, "b", 1, 10), 0)
	if b.Timestamp < a.Timestamp {
		t.Fatalf("commit timestamps went back: %d then %d", a.Timestamp, b.Timestamp)
	}
}

func TestBadAppends(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, MaxBatchBytes: 4096})
	good := makeBatch(t, "g", 1, 10)
	mustAppend(t, l, good, 3)

	big := makeBatch(t, "big", 1, 5000)
	_, err := l.Append(big, 3)
	wantErr(t, err, ErrBatchTooLarge)

	bad := makeBatch(t, "bad", 2, 10)
	bad[len(bad)-1] ^= 1
	_, err = l.Append(bad, 3)
	wantErr(t, err, ErrInvalidBatch)

	_, err = l.Append(makeBatch(t, "old", 1, 10), 2)
	wantErr(t, err, ErrStaleEpoch)

	if l.EndOffset() != 1 {
		t.Fatalf("refused appends changed the log: end %d", l.EndOffset())
	}
}

func TestAppendReplicated(t *testing.T) {
	leader := openLog(t, Config{Dir: t.TempDir()})
	follower := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10})
	for i := range 40 {
		mustAppend(t, leader, makeBatch(t, fmt.Sprint(i), 3, 700), int32(i/10))
	}
	for from := int64(0); from < leader.EndOffset(); {
		recs, err := leader.Read(from, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := follower.AppendReplicated(recs.Data); err != nil {
			t.Fatal(err)
		}
		from = recs.NextOffset
		recs.Release()
	}
	a, _ := readAll(t, leader, 0)
	b, _ := readAll(t, follower, 0)
	if len(a) != len(b) {
		t.Fatalf("follower has %d batches, leader %d", len(b), len(a))
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if got, want := fmt.Sprint(follower.Epochs()), fmt.Sprint(leader.Epochs()); got != want {
		t.Fatalf("follower epochs %s, leader %s", got, want)
	}
	// Not contiguous with the log end.
	recs, _ := leader.Read(3, 1)
	defer recs.Release()
	_, err := follower.AppendReplicated(recs.Data)
	wantErr(t, err, ErrNonContiguous)
}

// TestAppendReplicatedSpansSegments: one replicated append larger than a
// segment, arriving at a fresh segment, rolls as often as it needs to
// instead of writing past the segment (which failed the log).
func TestAppendReplicatedSpansSegments(t *testing.T) {
	leader := openLog(t, Config{Dir: t.TempDir()})
	for i := range 60 {
		mustAppend(t, leader, makeBatch(t, fmt.Sprint(i), 3, 1000), 0)
	}
	recs, err := leader.Read(0, 1<<20)
	if err != nil || recs.NextOffset != leader.EndOffset() {
		t.Fatalf("read the whole leader log: up to %d, %v", recs.NextOffset, err)
	}
	defer recs.Release()
	follower := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10})
	if _, err := follower.AppendReplicated(recs.Data); err != nil {
		t.Fatal(err)
	}
	segs := follower.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d bytes in %d segments", len(recs.Data), len(segs))
	}
	for _, s := range segs {
		if s.Bytes > 64<<10 {
			t.Fatalf("segment %d holds %d bytes, over the segment size", s.BaseOffset, s.Bytes)
		}
	}
	want, _ := readAll(t, leader, 0)
	got, err := readAll(t, follower, 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("follower holds %d of %d batches: %v", len(got), len(want), err)
	}
}
