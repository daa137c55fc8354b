package tiering

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// fakeController commits remote logs by the metadata's rules (leader
// epoch and version checked; see metastate's commitRemoteLog), keeping one
// bucket's committed handle.
type fakeController struct {
	mu        sync.Mutex
	epoch     int32 // the bucket's current leader epoch
	committed Handle
	commits   int
	cuts      []int64 // the cut offsets of fence cuts
	refuse    error   // when set, every commit fails with it
}

var errFencedForTest = fmt.Errorf("fenced")

func (c *fakeController) CommitRemoteLog(_ context.Context, b *LeaderBucket, expected int64, next Handle) (Handle, error) {
	return c.commit(b, expected, next, -1)
}

// CutRemoteLog takes a fence cut as the metadata does: anything at or
// below the cut, whatever the committed end.
func (c *fakeController) CutRemoteLog(_ context.Context, b *LeaderBucket, expected int64, next Handle, cutOffset int64) (Handle, error) {
	return c.commit(b, expected, next, cutOffset)
}

// commit applies a commit, a fence cut at cut when not negative.
func (c *fakeController) commit(b *LeaderBucket, expected int64, next Handle, cut int64) (Handle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.refuse != nil:
		return Handle{}, c.refuse
	case b.LeaderEpoch != c.epoch || expected != c.committed.Version:
		return Handle{}, fmt.Errorf("%w: epoch %d/%d, version %d/%d", errFencedForTest, b.LeaderEpoch, c.epoch, expected, c.committed.Version)
	case cut >= 0 && next.EndOffset > cut:
		return Handle{}, fmt.Errorf("cut at %d ends at %d", cut, next.EndOffset)
	case cut < 0 && (next.EndOffset < c.committed.EndOffset || next.StartOffset < c.committed.StartOffset):
		return Handle{}, fmt.Errorf("remote log moved back: %+v after %+v", next, c.committed)
	}
	next.Version = expected + 1
	c.committed = next
	c.commits++
	if cut >= 0 {
		c.cuts = append(c.cuts, cut)
	}
	return next, nil
}

func (c *fakeController) handle() Handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed
}

type tierFixture struct {
	t      *testing.T
	store  *Folder
	ctl    *fakeController
	rl     *RemoteLog
	log    *logstore.Log
	logDir string
	now    time.Time
}

func newTierFixture(t *testing.T) *tierFixture {
	store, err := NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &tierFixture{t: t, store: store, ctl: &fakeController{epoch: 3}, now: time.UnixMilli(1_000_000_000_000)}
	f.rl, err = NewRemoteLog(RemoteLogConfig{Store: store, Root: "cluster-a", Commit: f.ctl, MaxSegmentsPerRound: 4,
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.logDir = t.TempDir()
	f.log, err = logstore.Open(logstore.Config{Dir: f.logDir, SegmentMaxBytes: 64 << 10,
		Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.log.Close() })
	return f
}

// appendBatches appends n batches of 1 KB at leader epoch epoch.
func (f *tierFixture) appendBatches(n int, epoch int32) {
	f.t.Helper()
	for i := range n {
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true}, 0)
		if err := b.Append(record.AppendOnly, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			f.t.Fatal(err)
		}
		batch, err := b.Build()
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.log.Append(batch, epoch); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *tierFixture) bucket(hw int64) *LeaderBucket {
	return &LeaderBucket{TableID: 7, Bucket: 2, Log: f.log, LeaderEpoch: f.ctl.epoch, HighWatermark: hw,
		Committed: f.ctl.handle(), ExpireBelow: 1 << 62}
}

func (f *tierFixture) tier(b *LeaderBucket) Round {
	f.t.Helper()
	round, err := f.rl.Tier(f.t.Context(), b)
	if err != nil {
		f.t.Fatal(err)
	}
	return round
}

// keys lists the store's keys under the bucket.
func (f *tierFixture) keys() []string {
	var out []string
	if err := f.store.List(f.t.Context(), "cluster-a/t7/b2/", func(o ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestTierUploadsBelowHighWatermark: only sealed segments wholly below the
// high watermark go up, at most MaxSegmentsPerRound a round, and the
// committed manifest lists exactly what the log holds there.
func TestTierUploadsBelowHighWatermark(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(600, 3)
	segs := f.log.Segments()
	if len(segs) < 9 {
		t.Fatalf("%d segments; the test needs more", len(segs))
	}
	hw := segs[2].NextOffset + 1 // inside the fourth segment
	round := f.tier(f.bucket(hw))
	if round.Uploaded != 3 || round.Committed.EndOffset != segs[2].NextOffset || round.Committed.Version != 1 {
		t.Fatalf("round %+v; want segments 0-2 up to %d", round, segs[2].NextOffset)
	}
	// Nothing more below the high watermark: no commit.
	if again := f.tier(f.bucket(hw)); again.Changed || f.ctl.commits != 1 {
		t.Fatalf("second round %+v, %d commits", again, f.ctl.commits)
	}
	// The high watermark at the end: four a round.
	round = f.tier(f.bucket(f.log.EndOffset()))
	if round.Uploaded != 4 {
		t.Fatalf("uploaded %d, want the per-round bound 4", round.Uploaded)
	}
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Manifest(t.Context(), f.ctl.handle())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil || m.Start() != 0 || len(m.Segments) != 7 {
		t.Fatalf("manifest %+v: %v", m, err)
	}
	// Every offset reads back from the remote copy as the log has it.
	for off := int64(0); off < m.End(); off += 13 {
		loc, err := r.Locate(t.Context(), f.ctl.handle(), off)
		if err != nil {
			t.Fatal(err)
		}
		data, err := r.ReadBatches(t.Context(), loc, 4<<10)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.log.ReadBelow(loc.Segment.BaseOffset, loc.Segment.NextOffset, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(want.Data, data) {
			t.Fatalf("offset %d: the remote bytes are not the log's", off)
		}
		first := record.Batch(data)
		if first.BaseOffset() > off || first.BaseOffset() < loc.Segment.BaseOffset {
			t.Fatalf("offset %d: read starts at batch %d", off, first.BaseOffset())
		}
		want.Release()
	}
}

// TestReadBatchesFromOffsetBetweenIndexEntries: the segment index is
// sparse, so Locate points at a batch at or before the offset asked; a
// reader whose budget holds one batch gets the batch holding the offset,
// not the one the index entry names (which it would ask for again and
// again, never moving on).
func TestReadBatchesFromOffsetBetweenIndexEntries(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(200, 3)
	f.tier(f.bucket(f.log.EndOffset()))
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	h := f.ctl.handle()
	between := 0
	for off := h.StartOffset; off < h.EndOffset; off++ {
		loc, err := r.Locate(t.Context(), h, off)
		if err != nil {
			t.Fatal(err)
		}
		if first, err := r.ReadBatches(t.Context(), loc, 1); err == nil && record.Batch(first).BaseOffset() != off {
			between++
		}
		data, err := r.ReadBatchesFrom(t.Context(), loc, off, 1)
		if err != nil {
			t.Fatal(err)
		}
		if b := record.Batch(data); b.BaseOffset() > off || b.NextOffset() <= off || len(data) != len(b) {
			t.Fatalf("offset %d: read batch [%d, %d) of %d bytes (%d read)", off, b.BaseOffset(), b.NextOffset(), len(b), len(data))
		}
	}
	if between == 0 {
		t.Fatal("every offset has its own index entry: the test reads nothing past")
	}
}

// TestTierRemoteRetention: segments past the TTL leave the manifest and the
// store once the commit that drops them lands; ExpireBelow holds them.
func TestTierRemoteRetention(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(200, 3)
	f.now = f.now.Add(2 * time.Hour)
	f.appendBatches(200, 3)
	b := f.bucket(f.log.EndOffset())
	b.TTL = time.Hour
	f.rl.cfg.MaxSegmentsPerRound = 100
	round := f.tier(b)
	if round.Uploaded == 0 || round.Expired == 0 {
		t.Fatalf("round %+v: want uploads and the old segments expired", round)
	}
	h := f.ctl.handle()
	if h.StartOffset == 0 || h.EndOffset == 0 {
		t.Fatalf("committed %+v", h)
	}
	for _, k := range f.keys() {
		if strings.Contains(k, "/log/00000000000000000000-") {
			t.Fatalf("expired segment object %s still stored", k)
		}
	}
	// A primary-key table's changelog above its snapshot stays.
	g := newTierFixture(t)
	g.appendBatches(200, 3)
	g.now = g.now.Add(2 * time.Hour)
	gb := g.bucket(g.log.EndOffset())
	gb.TTL, gb.ExpireBelow = time.Hour, 0
	g.rl.cfg.MaxSegmentsPerRound = 100
	if round := g.tier(gb); round.Expired != 0 {
		t.Fatalf("%d segments expired above ExpireBelow", round.Expired)
	}
}

// TestTierFencedCommitDeletesNothing: a refused commit leaves the committed
// manifest's objects alone, and the next leader's first round sweeps what
// the refused one uploaded.
func TestTierFencedCommitDeletesNothing(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(300, 3)
	f.tier(f.bucket(f.log.EndOffset() / 2))
	committed := f.ctl.handle()
	before := f.keys()

	stale := f.bucket(f.log.EndOffset())
	f.ctl.epoch = 4 // leadership moved; the old leader's round goes on
	if _, err := f.rl.Tier(t.Context(), stale); err == nil {
		t.Fatal("a deposed leader's commit went through")
	}
	if f.ctl.handle() != committed {
		t.Fatalf("committed changed: %+v", f.ctl.handle())
	}
	after := f.keys()
	for _, k := range before {
		if !contains(after, k) {
			t.Fatalf("committed object %s deleted by a refused round", k)
		}
	}
	if len(after) <= len(before) {
		t.Fatal("the refused round uploaded nothing (the test needs its garbage)")
	}
	// The new leader (epoch 4) starts from the committed metadata; its
	// first round with work sweeps the stale upload: afterwards every
	// object is the committed manifest or one it references.
	fresh, err := NewRemoteLog(RemoteLogConfig{Store: f.store, Root: "cluster-a", Commit: f.ctl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Tier(t.Context(), f.bucket(f.log.EndOffset())); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	h := f.ctl.handle()
	m, err := r.Manifest(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	referenced := []string{h.ManifestKey}
	for _, s := range m.Segments {
		referenced = append(referenced, s.DataKey, s.IndexKey, s.WritersKey)
	}
	for _, k := range f.keys() {
		if !contains(referenced, k) {
			t.Fatalf("object %s is referenced by no committed manifest after the new leader's sweep", k)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseBucketKey(t *testing.T) {
	tests := []struct {
		rest string
		want parsedKey
	}{
		{"log/00000000000000000100-3.log", parsedKey{kind: kindSegment, epoch: 3}},
		{"log/00000000000000000100-3.index", parsedKey{kind: kindSegment, epoch: 3}},
		{"manifest/00000000000000000007-4-abcdef.json", parsedKey{kind: kindManifest, epoch: 4, version: 7}},
		{"log/garbage", parsedKey{}},
		{"manifest/7.json", parsedKey{}},
		{"other/x", parsedKey{}},
	}
	for _, tt := range tests {
		if got := parseBucketKey(tt.rest); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.rest, got, tt.want)
		}
	}
}

// EpochRanges: each segment's epochs over the offsets it holds, a
// shortened segment's and a gap's too.
func TestManifestEpochRanges(t *testing.T) {
	seg := func(base, next int64, epochs ...EpochStart) RemoteSegment {
		return RemoteSegment{BaseOffset: base, NextOffset: next, Bytes: 1, Epochs: epochs, DataKey: "d", IndexKey: "i"}
	}
	m := &Manifest{Format: ManifestFormat, Segments: []RemoteSegment{
		seg(0, 100, EpochStart{2, 0}),
		seg(100, 200, EpochStart{2, 100}, EpochStart{4, 150}),
		seg(250, 280, EpochStart{4, 250}, EpochStart{7, 290}), // shortened at 280: epoch 7 gone
	}}
	var got []string
	m.EpochRanges(func(e int32, start, end int64) { got = append(got, fmt.Sprintf("%d:[%d,%d)", e, start, end)) })
	want := []string{"2:[0,100)", "2:[100,150)", "4:[150,200)", "4:[250,280)"}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges %v, want %v", got, want)
	}
}

// failingStore fails every Put while down is set: an S3 outage.
type failingStore struct {
	ObjectStore
	down bool
}

func (s *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if s.down {
		return fmt.Errorf("connection refused (the store is down)")
	}
	return s.ObjectStore.Put(ctx, key, r, size)
}

// TestTierStoreOutage: while the store refuses writes a round fails,
// commits nothing (so no replica may delete local copies), and the round
// after the outage uploads everything it missed.
func TestTierStoreOutage(t *testing.T) {
	f := newTierFixture(t)
	down := &failingStore{ObjectStore: f.store, down: true}
	rl, err := NewRemoteLog(RemoteLogConfig{Store: down, Root: "cluster-a", Commit: f.ctl})
	if err != nil {
		t.Fatal(err)
	}
	f.appendBatches(300, 3)
	b := f.bucket(f.log.EndOffset())
	if _, err := rl.Tier(t.Context(), b); err == nil {
		t.Fatal("a round with the store down succeeded")
	}
	if f.ctl.commits != 0 || f.ctl.handle() != (Handle{}) {
		t.Fatalf("a round with the store down committed %+v", f.ctl.handle())
	}
	down.down = false
	round, err := rl.Tier(t.Context(), f.bucket(f.log.EndOffset()))
	if err != nil || round.Uploaded == 0 || f.ctl.handle().EndOffset == 0 {
		t.Fatalf("after the outage: %+v, %v", round, err)
	}
}

// TestTierUploadsWriterState: each remote segment carries its idempotent
// writers' last batches, and WritersBefore gives a replica starting over
// at an offset those wholly below it.
func TestTierUploadsWriterState(t *testing.T) {
	f := newTierFixture(t)
	seq := map[int64]int32{}
	for i := range 400 {
		id := int64(1 + i%2)
		b := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true, HasWriter: true,
			WriterID: id, Sequence: seq[id]}, 0)
		if err := b.Append(record.AppendOnly, bytes.Repeat([]byte{'w'}, 1000)); err != nil {
			t.Fatal(err)
		}
		batch, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.log.Append(batch, 3); err != nil {
			t.Fatal(err)
		}
		seq[id]++
	}
	f.rl.cfg.MaxSegmentsPerRound = 100
	f.tier(f.bucket(f.log.EndOffset()))
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	h := f.ctl.handle()
	m, err := r.Manifest(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	at := m.Segments[len(m.Segments)-1].BaseOffset // a replica starts over at a segment boundary
	ws, err := r.WritersBefore(t.Context(), h, at)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int64]WriterBatch{}
	for i, w := range ws {
		if w.LastOffset >= at || (i > 0 && w.BaseOffset <= ws[i-1].BaseOffset) {
			t.Fatalf("entry %+v at or past %d, or out of order", w, at)
		}
		last[w.WriterID] = w
	}
	// Batches of one record each, writers alternating: the last batch of
	// each writer below at is at at-1 or at-2.
	for id := int64(1); id <= 2; id++ {
		if w, ok := last[id]; !ok || w.LastOffset < at-2 || w.Sequence != int32(w.BaseOffset/2) {
			t.Fatalf("writer %d: last remembered %+v, want one of the two batches before %d", id, w, at)
		}
	}
}

// countingCalls counts every call to a store.
type countingCalls struct {
	ObjectStore
	calls int
}

func (s *countingCalls) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.calls++
	return s.ObjectStore.Put(ctx, key, r, size)
}

func (s *countingCalls) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	s.calls++
	return s.ObjectStore.Get(ctx, key, offset, length)
}

func (s *countingCalls) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	s.calls++
	return s.ObjectStore.List(ctx, prefix, fn)
}

// TestTierIdleBucketCostsNothing: a round for a bucket with nothing to
// upload or expire makes no store call, so thousands of idle buckets cost
// nothing per interval.
func TestTierIdleBucketCostsNothing(t *testing.T) {
	f := newTierFixture(t)
	counting := &countingCalls{ObjectStore: f.store}
	rl, err := NewRemoteLog(RemoteLogConfig{Store: counting, Root: "cluster-a", Commit: f.ctl})
	if err != nil {
		t.Fatal(err)
	}
	f.appendBatches(10, 3) // one active segment, nothing sealed
	b := f.bucket(f.log.EndOffset())
	b.TTL = time.Hour
	for range 3 {
		if _, err := rl.Tier(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if counting.calls != 0 {
		t.Fatalf("%d store calls for an idle bucket", counting.calls)
	}
}
