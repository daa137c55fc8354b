package logstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// fillSegments appends 1 KB batches until the log has at least n sealed
// segments, the leader epoch rising every 50 batches.
func fillSegments(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; len(l.Segments()) <= n; i++ {
		mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), int32(i/50))
	}
}

// TestLocalRetentionOnlyBelowRemoteEnd: the local rules delete only what
// remote storage holds, and keep LocalRetentionSegments sealed segments.
func TestLocalRetentionOnlyBelowRemoteEnd(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, LocalRetentionSegments: 2})
	fillSegments(t, l, 6)
	segs := l.Segments()
	if n, err := l.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("nothing remote, yet %d segments went: %v", n, err)
	}
	// Remote up to the end of the third segment: those three may go, but
	// the count rule keeps two sealed ones; the remote end stops deletion
	// first.
	l.SetRetentionBounds(RetentionBounds{RemoteEnd: segs[2].NextOffset, ExpireBelow: 1 << 62})
	enforceRetentionTo(t, l, segs[3].BaseOffset, "the 3 remote segments gone, the count rule's two kept")
	// Everything remote: the newest two sealed segments stay.
	l.SetRetentionBounds(RetentionBounds{RemoteEnd: l.EndOffset(), ExpireBelow: 1 << 62})
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if got := l.Segments(); len(got) != 3 || got[0].BaseOffset != segs[len(segs)-3].BaseOffset {
		t.Fatalf("kept %d segments from %d; want the newest 2 sealed and the active one", len(got), got[0].BaseOffset)
	}
}

// TestLocalRetentionOnlyAboveRemoteStart: the local rules delete nothing
// the remote log does not hold, below its end or not: segments below the
// remote start (a gap left by a leader restored from a KV snapshot, or a
// remote log that starts later) are the only copy. Before, retention
// compared with the remote end only, and a replica deleted the changelog
// below a restored leader's snapshot offset, which no manifest held.
func TestLocalRetentionOnlyAboveRemoteStart(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, LocalRetentionSegments: 1})
	fillSegments(t, l, 6)
	segs := l.Segments()
	l.SetRetentionBounds(RetentionBounds{RemoteStart: segs[2].BaseOffset, RemoteEnd: l.EndOffset(), ExpireBelow: 1 << 62})
	enforceRetentionTo(t, l, 0, "nothing below the remote start goes, so nothing after it either (the log stays gap-free)")
	l.SetRetentionBounds(RetentionBounds{RemoteStart: 0, RemoteEnd: l.EndOffset(), ExpireBelow: 1 << 62})
	enforceRetentionTo(t, l, segs[len(segs)-2].BaseOffset, "all remote: the newest sealed segment and the active one stay")
}

// TestLocalRetentionByAge: a remote segment older than LocalRetentionAge
// goes even within the count; one not remote stays however old.
func TestLocalRetentionByAge(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, LocalRetentionSegments: 100,
		LocalRetentionAge: time.Hour, Now: clock.Now})
	fillSegments(t, l, 4)
	segs := l.Segments()
	clock.Advance(2 * time.Hour)
	mustAppend(t, l, makeBatch(t, "fresh", 1, 1000), 10)
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("%d segments went, none remote", n)
	}
	l.SetRetentionBounds(RetentionBounds{RemoteEnd: segs[1].NextOffset, ExpireBelow: 1 << 62})
	enforceRetentionTo(t, l, segs[2].BaseOffset, "the 2 old remote segments gone")
}

// enforceRetentionTo runs EnforceRetention and checks the log then starts
// at start. New bounds also arm the log's own retention task, which may
// delete the segments first, so what is left is what counts, not what this
// call deleted.
func enforceRetentionTo(t *testing.T, l *Log, start int64, want string) {
	t.Helper()
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if got := l.StartOffset(); got != start {
		t.Fatalf("the log starts at %d, want %d: %s", got, start, want)
	}
}

// TestExpireBelowHoldsAgeRetention: the age rule deletes nothing at or
// above ExpireBelow (a primary-key changelog above its snapshot).
func TestExpireBelowHoldsAgeRetention(t *testing.T) {
	clock := newFakeClock()
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, RetentionAge: time.Hour, Now: clock.Now})
	fillSegments(t, l, 5)
	segs := l.Segments()
	l.SetRetentionBounds(RetentionBounds{ExpireBelow: segs[1].NextOffset})
	clock.Advance(2 * time.Hour)
	enforceRetentionTo(t, l, segs[2].BaseOffset, "the 2 segments below ExpireBelow gone")
	l.SetRetentionBounds(RetentionBounds{ExpireBelow: 0})
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("ExpireBelow 0 still let %d segments go", n)
	}
}

// TestOpenSealed: a sealed segment's bytes, offsets, epochs and index are
// what the log reads; its bytes outlive the segment's deletion.
func TestOpenSealed(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, RetentionBytes: 1})
	fillSegments(t, l, 3)
	segs := l.Segments()
	if _, err := l.OpenSealed(segs[len(segs)-1].BaseOffset); err == nil {
		t.Fatal("the active segment opened as sealed")
	}
	if _, err := l.OpenSealed(segs[1].BaseOffset + 1); err == nil {
		t.Fatal("a base offset that starts no segment opened")
	}
	s, err := l.OpenSealed(segs[1].BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.BaseOffset != segs[1].BaseOffset || s.NextOffset != segs[1].NextOffset || s.Bytes != segs[1].Bytes {
		t.Fatalf("sealed %+v, segment %+v", s, segs[1])
	}
	recs, err := l.ReadBelow(s.BaseOffset, s.NextOffset, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(recs.Data)
	recs.Release()
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("retention: %d %v", n, err)
	}
	got, err := io.ReadAll(s.Data())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("sealed bytes differ from the log's (%d vs %d): %v", len(got), len(want), err)
	}
	if len(s.Epochs) == 0 || s.Epochs[0].StartOffset != s.BaseOffset {
		t.Fatalf("epochs %+v do not start at the base %d", s.Epochs, s.BaseOffset)
	}
	for i := 1; i < len(s.Epochs); i++ {
		if e := s.Epochs[i]; e.StartOffset <= s.BaseOffset || e.StartOffset >= s.NextOffset || e.Epoch <= s.Epochs[i-1].Epoch {
			t.Fatalf("epoch entry %+v outside the segment or out of order: %+v", e, s.Epochs)
		}
	}
	// The index, through its encoding, finds every batch.
	ix, err := DecodeSegmentIndex(s.BaseOffset, s.Bytes, s.Index.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	for off := s.BaseOffset; off < s.NextOffset; off += 7 {
		pos := ix.PositionFor(off)
		if pos < 0 || pos >= s.Bytes {
			t.Fatalf("offset %d: position %d outside the segment", off, pos)
		}
	}
	bad := s.Index.Marshal()
	bad[len(bad)/2] ^= 1
	if _, err := DecodeSegmentIndex(s.BaseOffset, s.Bytes, bad); err == nil {
		t.Fatal("a flipped bit in an index decoded")
	}
}

func TestEpochsWithin(t *testing.T) {
	entries := []EpochEntry{{1, 0}, {2, 100}, {5, 250}}
	tests := []struct {
		base, next int64
		want       []EpochEntry
	}{
		{0, 100, []EpochEntry{{1, 0}}},
		{50, 150, []EpochEntry{{1, 50}, {2, 100}}},
		{100, 300, []EpochEntry{{2, 100}, {5, 250}}},
		{260, 400, []EpochEntry{{5, 260}}},
	}
	for _, tt := range tests {
		if got := epochsWithin(entries, tt.base, tt.next); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("[%d, %d): %v, want %v", tt.base, tt.next, got, tt.want)
		}
	}
}

// TestReset: a reset log is empty at the new offset, takes replicated
// batches from there, and reopens so; old data and epochs are gone.
func TestReset(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	fillSegments(t, l, 2)
	if err := l.Reset(l.EndOffset() - 1); err == nil {
		t.Fatal("a reset below the end went through (that is a truncation)")
	}
	if err := l.Reset(1000); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 1000 || l.EndOffset() != 1000 || len(l.Epochs()) != 0 || len(l.Segments()) != 1 {
		t.Fatalf("after reset: [%d, %d), epochs %v, %d segments", l.StartOffset(), l.EndOffset(), l.Epochs(), len(l.Segments()))
	}
	if _, err := l.Read(0, 100); err == nil {
		t.Fatal("old data still reads")
	}
	b := makeBatch(t, "after", 3, 100)
	b.SetBaseOffset(1000)
	b.SetLeaderEpoch(9)
	if _, err := l.AppendReplicated(b); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2 := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	if l2.StartOffset() != 1000 || l2.EndOffset() != 1003 {
		t.Fatalf("reopened: [%d, %d)", l2.StartOffset(), l2.EndOffset())
	}
	if e, ok := l2.LatestEpoch(); !ok || e != 9 {
		t.Fatalf("epoch %d %v after reopen", e, ok)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), deletedSuffix) {
			t.Fatalf("%s left behind", e.Name())
		}
	}
}

// TestResetCrashLeavesValidLog: a crash while the old segments are renamed
// away (simulated by renaming only the oldest) leaves a log that opens as
// the remaining suffix.
func TestResetCrashLeavesValidLog(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	fillSegments(t, l, 3)
	segs := l.Segments()
	end := l.EndOffset()
	l.Close()
	oldest := segmentFile(dir, segs[0].BaseOffset)
	if err := os.Rename(oldest, oldest+deletedSuffix); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, Config{Dir: dir, SegmentMaxBytes: 64 << 10})
	if l2.StartOffset() != segs[1].BaseOffset || l2.EndOffset() != end {
		t.Fatalf("reopened: [%d, %d), want [%d, %d)", l2.StartOffset(), l2.EndOffset(), segs[1].BaseOffset, end)
	}
}
