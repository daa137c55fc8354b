package tiering

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// TestTierRefusesDamagedSegment: a sealed segment with one flipped payload
// byte is never uploaded or committed. The round commits the good segments
// before it and fails with a *logstore.CorruptError at the damaged batch's
// offset (the leader's damage path takes it from there). Before, upload
// copied the segment byte for byte, checking only batch headers; once
// committed, local retention deleted every replica's good copy and the
// batch stayed CORRUPT for ever.
func TestTierRefusesDamagedSegment(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(200, 3)
	segs := f.log.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments; the test needs more", len(segs))
	}
	files, err := filepath.Glob(filepath.Join(f.logDir, "*.log"))
	if err != nil || len(files) < 2 {
		t.Fatalf("segment files %v: %v", files, err)
	}
	slices.Sort(files)
	flipFileByte(t, files[1], record.HeaderSize+40) // inside segment 1's first batch's payload

	round, err := f.rl.Tier(t.Context(), f.bucket(f.log.EndOffset()))
	var ce *logstore.CorruptError
	if !errors.As(err, &ce) || ce.Offset != segs[1].BaseOffset || !errors.Is(err, record.ErrCorruptBatch) {
		t.Fatalf("round over a damaged segment: %v; want a corrupt log at offset %d", err, segs[1].BaseOffset)
	}
	if round.Uploaded != 1 || f.ctl.handle().EndOffset != segs[0].NextOffset {
		t.Fatalf("round %+v, committed %+v; want only segment 0 (ending at %d) committed", round, f.ctl.handle(), segs[0].NextOffset)
	}
	damaged := fmt.Sprintf("/log/%020d-", segs[1].BaseOffset)
	for _, k := range f.keys() {
		if strings.Contains(k, damaged) {
			t.Fatalf("the damaged segment went up as %s", k)
		}
	}
}

// TestVerifySegmentDamage: every kind of damage a segment can carry is
// found: a flipped payload byte (CRC), a header whose length runs past the
// segment, a batch out of the offset sequence, a segment that ends early.
func TestVerifySegmentDamage(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(3, 3)
	recs, err := f.log.ReadBelow(0, f.log.EndOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	good := slices.Clone(recs.Data)
	recs.Release()
	first := record.Batch(good).Size()
	if _, err := verifySegment(strings.NewReader(string(good)), int64(len(good)), 0, 3); err != nil {
		t.Fatalf("intact segment: %v", err)
	}
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		next   int64
		offset int64
	}{
		{"payload byte", func(b []byte) []byte { b[first+record.HeaderSize+5] ^= 1; return b }, 3, 1},
		{"length past the end", func(b []byte) []byte { b[first+8] = 0x7f; return b }, 3, 1},
		{"offset sequence", func(b []byte) []byte { b[first+7] ^= 4; return b }, 3, 1},
		{"ends early", func(b []byte) []byte { return b[:2*first] }, 3, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := c.damage(slices.Clone(good))
			_, err := verifySegment(strings.NewReader(string(data)), int64(len(data)), 0, c.next)
			var ce *logstore.CorruptError
			if !errors.As(err, &ce) || ce.Offset != c.offset {
				t.Fatalf("got %v, want damage at offset %d", err, c.offset)
			}
		})
	}
}

func flipFileByte(t *testing.T, path string, pos int64) {
	t.Helper()
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	b := make([]byte, 1)
	if _, err := file.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := file.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestTierRestoredLeaderKeepsRemoteStart: the remote log ends at E; the
// bucket's new leader was restored from a KV snapshot at S > E, so its log
// starts at S. Its first upload keeps [0, E) (only log.ttl moves the
// remote start) and continues at S with a gap between, and the handle
// says the remote log covers every offset from S only. A read in the gap
// is answered from the first segment after it. Before, the upload was
// taken as "the remote log restarts after a gap" and the manifest dropped
// [0, E).
func TestTierRestoredLeaderKeepsRemoteStart(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(200, 3)
	first := f.tier(f.bucket(f.log.EndOffset()))
	e := first.Committed.EndOffset
	if first.Committed.StartOffset != 0 || e == 0 {
		t.Fatalf("first leader committed %+v", first.Committed)
	}

	// The restored replica's log starts at S, past E.
	s := f.log.EndOffset() + 500
	restored, err := logstore.Open(logstore.Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	if err := restored.Reset(s); err != nil {
		t.Fatal(err)
	}
	f.log = restored
	f.ctl.epoch = 4
	f.appendBatches(200, 4)
	round := f.tier(f.bucket(restored.EndOffset()))
	got := round.Committed
	if got.StartOffset != 0 || got.RunStart != s || got.CoveredFrom() != s || got.EndOffset <= s {
		t.Fatalf("after the restored leader's upload: %+v; want start 0 kept, covered from %d, ending past it", got, s)
	}
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, e - 1} {
		if loc, err := r.Locate(t.Context(), got, off); err != nil || loc.Segment.BaseOffset > off {
			t.Fatalf("offset %d below the gap: %+v, %v", off, loc, err)
		}
	}
	if loc, err := r.Locate(t.Context(), got, e+10); err != nil || loc.Segment.BaseOffset != s {
		t.Fatalf("offset %d in the gap: %+v, %v; want the segment starting at %d", e+10, loc, err, s)
	}
}
