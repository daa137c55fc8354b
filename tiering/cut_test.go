package tiering

import (
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// TestTierCutsFencedRemoteLog: leader A (epoch 3) uploaded [0, E). After
// an unclean election, leader B (epoch 5) holds A's epoch-3 batches only
// up to P < E, then its own. Its first round, fenced, commits the remote
// log cut at P (no segment at or past it), deletes the dropped segments'
// objects, and its next round uploads its own history from the cut on: a
// read at P then returns B's batch, never A's.
func TestTierCutsFencedRemoteLog(t *testing.T) {
	f := newTierFixture(t)
	f.appendBatches(300, 3)
	first := f.tier(f.bucket(f.log.EndOffset()))
	e := first.Committed.EndOffset
	segsA := f.log.Segments()
	p := segsA[1].BaseOffset + 10 // inside A's second segment

	b, err := logstore.Open(logstore.Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f.log = b
	f.appendBatches(int(p), 3)
	f.appendBatches(300, 5)
	f.ctl.epoch = 5

	lb := f.bucket(b.EndOffset())
	lb.Fenced = true
	var askedEnd int64 = -1
	lb.Divergence = func(m *Manifest) (int64, bool) {
		askedEnd = m.End()
		return p, true
	}
	round := f.tier(lb)
	if askedEnd != e || len(f.ctl.cuts) != 1 || f.ctl.cuts[0] != p {
		t.Fatalf("divergence asked of a manifest ending at %d, cuts %v; want the committed manifest (end %d) cut at %d", askedEnd, f.ctl.cuts, e, p)
	}
	cut := round.Committed
	if cut.EndOffset != p || cut.StartOffset != 0 {
		t.Fatalf("after the cut: %+v; want [0, %d): segment 1 shortened to end at the cut", cut, p)
	}
	for _, k := range f.keys() {
		var base int64
		var epoch int32
		if _, err := fmt.Sscanf(k, "cluster-a/t7/b2/log/%d-%d.", &base, &epoch); err == nil && base > segsA[1].BaseOffset && epoch == 3 {
			t.Fatalf("object %s of a dropped segment is still there", k)
		}
	}
	r, err := NewReader(ReaderConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	// The shortened segment serves what it still holds, up to the cut.
	loc, err := r.Locate(t.Context(), cut, p-1)
	if err != nil || loc.Segment.BaseOffset != segsA[1].BaseOffset {
		t.Fatalf("offset %d after the cut: %+v, %v", p-1, loc, err)
	}
	data, err := r.ReadBatches(t.Context(), loc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(-1)
	for it := record.NewBatchIterator(data, true); it.Next(); {
		last = it.Batch().LastOffset()
	}
	if last != p-1 {
		t.Fatalf("the shortened segment reads up to offset %d, want %d", last, p-1)
	}

	lb = f.bucket(b.EndOffset())
	next := f.tier(lb)
	if next.Uploaded == 0 || next.Committed.EndOffset <= p {
		t.Fatalf("round after the cut: %+v; want B's segments uploaded past %d", next, p)
	}
	loc, err = r.Locate(t.Context(), next.Committed, p)
	if err != nil {
		t.Fatal(err)
	}
	data, err = r.ReadBatches(t.Context(), loc, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	for it := record.NewBatchIterator(data, true); it.Next(); {
		if bt := it.Batch(); bt.LastOffset() >= p && bt.LeaderEpoch() != 5 {
			t.Fatalf("remote batch [%d, %d] at or past the cut is of epoch %d, not the new leader's 5", bt.BaseOffset(), bt.LastOffset(), bt.LeaderEpoch())
		}
	}
}

// TestTierCutAtSegmentEndLeavesUploadsAFollow: the new leader's history
// parts from the remote log exactly where one of the old leader's
// segments ends (P), and its own batches from there on are smaller, so
// its log did not roll at P: its segment holding P starts where the old
// leader's last kept segment does. B's upload of that segment must replace
// the kept one (Manifest.Add), or no upload can ever follow it (a segment
// with the base of the one before is no valid successor) and the bucket's
// tiering stalls for good. Found by the integration test
// TestUncleanElectionOverTieredLog.
func TestTierCutAtSegmentEndLeavesUploadsAFollow(t *testing.T) {
	f := newTierFixture(t)
	// Batches of 956 bytes leave room for a small one in each segment.
	for range 300 {
		f.appendSized(3, 900)
	}
	f.tier(f.bucket(f.log.EndOffset()))
	segsA := f.log.Segments()
	p := segsA[1].NextOffset // where A's second segment ends

	b, err := logstore.Open(logstore.Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f.log = b
	for range p {
		f.appendSized(3, 900)
	}
	f.ctl.epoch = 5
	for range 300 {
		f.appendSized(5, 10)
	}
	straddles := false
	for _, s := range b.Segments() {
		straddles = straddles || (s.BaseOffset == segsA[1].BaseOffset && s.NextOffset > p)
	}
	if !straddles {
		t.Fatalf("B's segments %+v: none starts at %d and goes past %d, as the test needs", b.Segments(), segsA[1].BaseOffset, p)
	}

	lb := f.bucket(b.EndOffset())
	lb.Fenced = true
	lb.Divergence = func(*Manifest) (int64, bool) { return p, true }
	cut := f.tier(lb).Committed
	for range 3 {
		if _, err := f.rl.Tier(t.Context(), f.bucket(b.EndOffset())); err != nil {
			t.Fatalf("a round after the cut to [%d, %d): %v", cut.StartOffset, cut.EndOffset, err)
		}
	}
	if end := f.ctl.handle().EndOffset; end <= p {
		t.Fatalf("remote log ends at %d after the rounds following the cut; want B's segments uploaded past %d", end, p)
	}
	if len(f.ctl.cuts) != 1 || f.ctl.cuts[0] != p || cut.EndOffset != p {
		t.Fatalf("cuts %v, remote log after the cut %+v; want the cut at %d, ending there", f.ctl.cuts, cut, p)
	}
}

// appendSized appends a batch of one record of payloadBytes at leader
// epoch epoch.
func (f *tierFixture) appendSized(epoch int32, payloadBytes int) {
	f.t.Helper()
	bb := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true}, 0)
	if err := bb.Append(record.AppendOnly, make([]byte, payloadBytes)); err != nil {
		f.t.Fatal(err)
	}
	batch, err := bb.Build()
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.log.Append(batch, epoch); err != nil {
		f.t.Fatal(err)
	}
}
