package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestCorruptReadThenTruncate: a read that meets a damaged batch gets a
// *CorruptError naming the batch's offset; truncating the log to that offset
// drops the damage and everything after it, and the suffix fetched again
// from a peer (the undamaged batches) appends and survives a reopen.
func TestCorruptReadThenTruncate(t *testing.T) {
	const batches, perBatch = 60, 3
	for _, where := range []string{"sealed", "active"} {
		for _, damage := range []struct {
			name string
			at   int64 // byte inside the batch to flip
		}{
			{"payload", record.HeaderSize + 10}, // checksum mismatch
			{"length", 10},                      // length field: off by 4 KiB, a checksum mismatch
			{"length-past-segment", 8},          // length field: past the segment's end
			{"base-offset", 6},                  // outside the checksum: breaks the offset sequence
		} {
			t.Run(where+"/"+damage.name, func(t *testing.T) {
				dir := t.TempDir()
				cfg := Config{Dir: dir, SegmentMaxBytes: 64 << 10, IndexIntervalBytes: 4096}
				l := openLog(t, cfg)
				for i := range batches {
					mustAppend(t, l, makeBatch(t, fmt.Sprint(i), perBatch, 1000), 0)
				}
				peer, err := readAll(t, l, 0) // what a peer would still hold
				if err != nil {
					t.Fatal(err)
				}
				segs := l.Segments()
				seg := segs[0]
				if where == "active" {
					seg = segs[len(segs)-1]
				}
				// Damage the 6th batch of the segment, mapped and all.
				batchBytes := int64(len(peer[0]))
				damaged := seg.BaseOffset + 5*perBatch
				flipBit(t, segmentFile(dir, seg.BaseOffset), 5*batchBytes+damage.at)

				for _, from := range []int64{0, seg.BaseOffset, damaged, damaged + 1} {
					_, err := readAll(t, l, from)
					var ce *CorruptError
					if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
						t.Fatalf("read from %d: want a *CorruptError, got %v", from, err)
					}
					if ce.Offset != damaged || ce.SegmentBase != seg.BaseOffset || ce.Position != 5*batchBytes {
						t.Fatalf("read from %d: %v; want the damage at offset %d, byte %d of segment %d",
							from, ce, damaged, 5*batchBytes, seg.BaseOffset)
					}
				}

				repairFromPeer(t, l, cfg, peer, damaged, perBatch)
			})
		}
	}
}

// repairFromPeer truncates l to its damaged offset, as a replica does,
// appends the batches a peer holds from there (peer holds every batch, of
// perBatch records each), and checks l then holds all of them, also after
// a reopen.
func repairFromPeer(t *testing.T, l *Log, cfg Config, peer []record.Batch, damaged, perBatch int64) {
	t.Helper()
	if err := l.Truncate(damaged); err != nil {
		t.Fatalf("truncate to the damaged offset %d: %v", damaged, err)
	}
	if l.EndOffset() != damaged {
		t.Fatalf("end after truncation %d, want %d", l.EndOffset(), damaged)
	}
	kept, err := readAll(t, l, 0)
	if err != nil || len(kept) != int(damaged/perBatch) {
		t.Fatalf("after truncation: %d batches, %v", len(kept), err)
	}
	var suffix []byte
	for _, b := range peer[damaged/perBatch:] {
		suffix = append(suffix, b...)
	}
	if _, err := l.AppendReplicated(suffix); err != nil {
		t.Fatalf("re-fetched suffix: %v", err)
	}
	checkBatchesEqual(t, l, peer)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkBatchesEqual(t, openLog(t, cfg), peer)
}

func checkBatchesEqual(t *testing.T, l *Log, want []record.Batch) {
	t.Helper()
	got, err := readAll(t, l, 0)
	if err != nil || len(got) != len(want) {
		t.Fatalf("read %d batches, want %d: %v", len(got), len(want), err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}
