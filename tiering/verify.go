package tiering

import (
	"fmt"
	"io"
	"sort"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// An upload copies a sealed segment byte for byte, and once the manifest
// commits it every replica's local retention may delete its own copy: a
// batch damaged on the uploader's disk would then be the only copy left,
// unreadable for good. So every batch is checked (its header, its place in
// the offset sequence and its CRC) before the segment goes up, and a
// failure is damage on the leader (a *logstore.CorruptError, handled as a
// reader's would be: another in-sync replica leads and this one fetches
// the range again), never data to commit. The segment is streamed through
// a fixed buffer, so the check holds no batch whole, whatever length a
// damaged header claims.

// verifyChunkBytes is the read size of a segment's verification.
const verifyChunkBytes = 256 << 10

// verifySegment checks every batch of the size bytes of data, a sealed
// segment holding [base, next), and returns, per idempotent writer, its
// last writersPerSegment batches, in offset order.
func verifySegment(data io.ReaderAt, size, base, next int64) ([]WriterBatch, error) {
	last := map[int64][]WriterBatch{}
	header := make([]byte, record.HeaderSize)
	chunk := make([]byte, verifyChunkBytes)
	offset := base
	damaged := func(pos int64, format string, args ...any) error {
		return &logstore.CorruptError{Offset: offset, SegmentBase: base, Position: pos,
			Err: fmt.Errorf("%w: "+format, append([]any{record.ErrCorruptBatch}, args...)...)}
	}
	for pos := int64(0); pos < size; {
		if _, err := data.ReadAt(header, pos); err != nil {
			return nil, pkgerr.Errorf("tiering", "verify segment %d: batch header at byte %d: %w", base, pos, err)
		}
		n, ok := record.PeekSize(header)
		switch {
		case !ok || pos+int64(n) > size:
			return nil, damaged(pos, "batch length %d at byte %d of a %d-byte segment", n, pos, size)
		case n < record.HeaderSize:
			return nil, damaged(pos, "batch of %d bytes, shorter than its header", n)
		}
		b := record.Batch(header)
		if b.BaseOffset() != offset || b.LastOffsetDelta() < 0 || b.NextOffset() > next {
			return nil, damaged(pos, "batch [%d, %d] where offset %d comes next, in a segment ending at %d",
				b.BaseOffset(), b.LastOffset(), offset, next)
		}
		crc := record.UpdateCRC(0, header[record.CRCStart:])
		for at, end := pos+record.HeaderSize, pos+int64(n); at < end; {
			buf := chunk[:min(int64(len(chunk)), end-at)]
			if _, err := data.ReadAt(buf, at); err != nil {
				return nil, pkgerr.Errorf("tiering", "verify segment %d: batch at byte %d: %w", base, pos, err)
			}
			crc = record.UpdateCRC(crc, buf)
			at += int64(len(buf))
		}
		if crc != b.CRC() {
			return nil, damaged(pos, "crc %#08x, header says %#08x (base offset %d)", crc, b.CRC(), offset)
		}
		if id := b.WriterID(); id != record.NoWriterID {
			ws := append(last[id], WriterBatch{WriterID: id, Sequence: b.BatchSequence(), BaseOffset: b.BaseOffset(),
				LastOffset: b.LastOffset(), TimestampMs: b.CommitTimestamp()})
			if len(ws) > writersPerSegment {
				ws = ws[1:]
			}
			last[id] = ws
		}
		offset = b.NextOffset()
		pos += int64(n)
	}
	if offset != next {
		return nil, damaged(size, "batches end at offset %d, the segment at %d", offset, next)
	}
	var out []WriterBatch
	for _, ws := range last {
		out = append(out, ws...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BaseOffset < out[j].BaseOffset })
	return out, nil
}
