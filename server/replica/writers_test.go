package replica

import (
	"errors"
	"math"
	"testing"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

func writerBatchOf(t *testing.T, writer int64, seq int32, base int64) record.Batch {
	t.Helper()
	b := record.NewBatchBuilder(record.BatchOptions{HasWriter: true, WriterID: writer, Sequence: seq, AppendOnly: true}, 0)
	b.Append(record.AppendOnly, []byte("x"))
	b.Append(record.AppendOnly, []byte("y"))
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	out.SetBaseOffset(base)
	return out
}

// TestWriterTable: the next sequence appends, a remembered one is answered
// with its original offsets, anything else is out of order; only the last
// five batches are remembered.
func TestWriterTable(t *testing.T) {
	wt := newWriterTable()
	if dup, err := wt.check(7, 0, false); dup != nil || err != nil {
		t.Fatalf("first batch of a new writer: %v %v", dup, err)
	}
	for seq := range int32(8) {
		if dup, err := wt.check(7, seq, false); dup != nil || err != nil {
			t.Fatalf("seq %d: %v %v", seq, dup, err)
		}
		wt.record(writerBatchOf(t, 7, seq, int64(seq)*2))
	}
	// Retries of the last five are duplicates with their offsets.
	for seq := int32(3); seq < 8; seq++ {
		dup, err := wt.check(7, seq, false)
		if err != nil || dup == nil || dup.Base != int64(seq)*2 || dup.Last != int64(seq)*2+1 {
			t.Fatalf("retry of seq %d: %+v %v", seq, dup, err)
		}
	}
	// Older than five, or a gap: out of order.
	for _, seq := range []int32{2, 0, 9, 100} {
		if _, err := wt.check(7, seq, false); !errors.Is(err, transport.ErrOutOfOrderSequence) {
			t.Fatalf("seq %d: %v", seq, err)
		}
	}
	if dup, err := wt.check(7, 8, false); dup != nil || err != nil {
		t.Fatalf("next sequence: %v %v", dup, err)
	}
	// Batches without a writer are never checked; other writers are apart.
	if dup, err := wt.check(record.NoWriterID, 42, false); dup != nil || err != nil {
		t.Fatal("batch without a writer was checked")
	}
	if dup, err := wt.check(8, 5, false); dup != nil || err != nil {
		t.Fatalf("another writer: %v %v", dup, err)
	}
}

// TestWriterSnapshotRoundTrip: the snapshot restores every writer's recent
// batches, and a damaged file is refused.
func TestWriterSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	wt := newWriterTable()
	for w := int64(1); w <= 3; w++ {
		for seq := range int32(7) {
			wt.record(writerBatchOf(t, w, seq, w*1000+int64(seq)*2))
		}
	}
	buf := encodeWriters(wt, 77, snapAnchor{epoch: 3, crc: 0xfeed})
	if err := writeWriterSnap(dir, buf); err != nil {
		t.Fatal(err)
	}
	got, offset, anchor, err := loadWriters(dir)
	if err != nil || offset != 77 || got.Len() != 3 || anchor != (snapAnchor{epoch: 3, crc: 0xfeed}) {
		t.Fatalf("load: %v offset %d writers %d anchor %+v", err, offset, got.Len(), anchor)
	}
	for w := int64(1); w <= 3; w++ {
		dup, err := got.check(w, 5, false)
		if err != nil || dup == nil || dup.Base != w*1000+10 {
			t.Fatalf("writer %d retry after reload: %+v %v", w, dup, err)
		}
		if d, err := got.check(w, 7, false); d != nil || err != nil {
			t.Fatalf("writer %d next sequence after reload: %v %v", w, d, err)
		}
	}
	buf[20] ^= 1
	if err := writeWriterSnap(dir, buf); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := loadWriters(dir); !errors.Is(err, errBadWriterSnap) {
		t.Fatalf("damaged snapshot: %v", err)
	}
}

// TestWriterSequenceWraps: after sequence MaxInt32 a writer sends 0 (the
// client wraps there), which is the next batch, not out of order.
func TestWriterSequenceWraps(t *testing.T) {
	wt := newWriterTable()
	wt.record(writerBatchOf(t, 7, math.MaxInt32-1, 0))
	wt.record(writerBatchOf(t, 7, math.MaxInt32, 2))
	if dup, err := wt.check(7, 0, false); dup != nil || err != nil {
		t.Fatalf("sequence 0 after MaxInt32: %v %v", dup, err)
	}
	wt.record(writerBatchOf(t, 7, 0, 4))
	if dup, err := wt.check(7, math.MaxInt32, false); err != nil || dup == nil || dup.Base != 2 {
		t.Fatalf("retry of MaxInt32 after the wrap: %+v %v", dup, err)
	}
	if _, err := wt.check(7, math.MinInt32, false); !errors.Is(err, transport.ErrOutOfOrderSequence) {
		t.Fatalf("a negative sequence: %v", err)
	}
}
