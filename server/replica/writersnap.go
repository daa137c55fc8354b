package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
)

// The writer-state snapshot lets a replica reopen without rescanning its log
// for idempotent writers: the writer table as of a log offset, replayed
// forward from there. It is taken periodically and on close, under the
// produce lock (so it matches the log exactly at that offset), at an end
// the log has just synced (so no crash can take the log back below it).
//
// A snapshot is only as good as the log below its offset: a truncation
// followed by other batches up to or past that offset would make it answer
// retries as duplicates at offsets now holding other data. So it is
// dropped before every truncation, and it names the batch that ends at its
// offset (leader epoch and CRC): a snapshot whose batch the log no longer
// holds (a crash between a truncation and the drop, a lost tail) is not
// used, and the table is rebuilt from the log.
//
// Layout (big-endian): offset i64 | anchor epoch i32 | anchor CRC u32 |
// writers u32 | per writer: id i64, n u8, next u8, 5 × (seq i32, base i64,
// last i64, ts i64) | CRC-32C of all before.
const (
	writerSnapFile     = "writer-state"
	writerSnapInterval = 2 // high-watermark checkpoint rounds between snapshots (10 s)
	writerEntryBytes   = 8 + 1 + 1 + writersRemembered*(4+8+8+8)
	writerSnapHeader   = 8 + 4 + 4 + 4
)

// snapAnchor names the batch that ends at a snapshot's offset; the zero
// anchor (epoch -1) stands for an offset at the log's start.
type snapAnchor struct {
	epoch int32
	crc   uint32
}

var noBatch = snapAnchor{epoch: -1}

var errBadWriterSnap = pkgerr.New("replica", "damaged writer-state snapshot")

// saveWritersLocked writes the snapshot at the log's end, after syncing
// the log, unless the snapshot on disk was taken there (the writer table
// changes only with the log, and a truncation drops the snapshot first);
// callers hold produceMu.
func (r *Replica) saveWritersLocked() error {
	if err := r.log.Sync(); err != nil {
		return err
	}
	end := r.log.EndOffset()
	if written := r.log.WrittenEnd(); written != end {
		return pkgerr.Errorf("replica", "log written to %d but durable to %d after a sync", written, end)
	}
	if end == r.writers.saved {
		return nil
	}
	a, err := r.anchorAt(end)
	if err != nil {
		return err
	}
	if err := writeWriterSnap(r.dir, encodeWriters(r.writers.table, end, a)); err != nil {
		return err
	}
	r.writers.saved = end
	return nil
}

// anchorAt names the batch of the log that ends at offset.
func (r *Replica) anchorAt(offset int64) (snapAnchor, error) {
	if offset == r.log.StartOffset() {
		return noBatch, nil
	}
	recs, err := r.log.Read(offset-1, 1)
	if err != nil {
		return snapAnchor{}, err
	}
	defer recs.Release()
	it := recs.Batches()
	if !it.Next() {
		return snapAnchor{}, pkgerr.Errorf("replica", "no batch holds offset %d: %v", offset-1, it.Err())
	}
	b := it.Batch()
	if b.LastOffset() != offset-1 {
		return snapAnchor{}, pkgerr.Errorf("replica", "offset %d is inside batch %d-%d", offset, b.BaseOffset(), b.LastOffset())
	}
	return snapAnchor{epoch: b.LeaderEpoch(), crc: b.CRC()}, nil
}

// dropWriterSnapshot removes the snapshot before the log is truncated.
func (r *Replica) dropWriterSnapshot() error {
	r.writers.saved = -1
	if err := os.Remove(filepath.Join(r.dir, writerSnapFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// encodeWriters renders a writer table as of a log offset, whose last
// batch is a.
func encodeWriters(t *writerTable, offset int64, a snapAnchor) []byte {
	buf := make([]byte, 0, writerSnapHeader+t.Len()*writerEntryBytes+4)
	buf = binary.BigEndian.AppendUint64(buf, uint64(offset))
	buf = binary.BigEndian.AppendUint32(buf, uint32(a.epoch))
	buf = binary.BigEndian.AppendUint32(buf, a.crc)
	buf = binary.BigEndian.AppendUint32(buf, uint32(t.Len()))
	t.Histories(func(h replication.WriterHistory) {
		buf = binary.BigEndian.AppendUint64(buf, uint64(h.WriterID))
		buf = append(buf, byte(h.N), byte(h.Next))
		for _, b := range h.Batches {
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.Seq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.Base))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.Last))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.TimestampMs))
		}
	})
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// writeWriterSnap replaces the snapshot file (not fsynced: losing it only
// means a rescan on the next open).
func writeWriterSnap(dir string, buf []byte) error {
	return replaceFile(dir, writerSnapFile, buf)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// loadWriters reads the snapshot: the writer table, the offset it covers
// and the batch that ends there.
func loadWriters(dir string) (*writerTable, int64, snapAnchor, error) {
	buf, err := os.ReadFile(filepath.Join(dir, writerSnapFile))
	if err != nil {
		return nil, 0, snapAnchor{}, err
	}
	if len(buf) < writerSnapHeader+4 || crc32.Checksum(buf[:len(buf)-4], castagnoli) != binary.BigEndian.Uint32(buf[len(buf)-4:]) {
		return nil, 0, snapAnchor{}, errBadWriterSnap
	}
	offset := int64(binary.BigEndian.Uint64(buf))
	a := snapAnchor{epoch: int32(binary.BigEndian.Uint32(buf[8:])), crc: binary.BigEndian.Uint32(buf[12:])}
	n := int(binary.BigEndian.Uint32(buf[16:]))
	body := buf[writerSnapHeader : len(buf)-4]
	if len(body) != n*writerEntryBytes {
		return nil, 0, snapAnchor{}, fmt.Errorf("%w: %d writers in %d bytes", errBadWriterSnap, n, len(body))
	}
	t := newWriterTable()
	for i := range n {
		e := body[i*writerEntryBytes:]
		h := replication.WriterHistory{WriterID: int64(binary.BigEndian.Uint64(e)), N: int(e[8]), Next: int(e[9])}
		p := e[10:]
		for j := range writersRemembered {
			h.Batches[j] = replication.WriterBatch{
				Seq:         int32(binary.BigEndian.Uint32(p)),
				Base:        int64(binary.BigEndian.Uint64(p[4:])),
				Last:        int64(binary.BigEndian.Uint64(p[12:])),
				TimestampMs: int64(binary.BigEndian.Uint64(p[20:])),
			}
			p = p[28:]
		}
		if !t.Restore(h) {
			return nil, 0, snapAnchor{}, errBadWriterSnap
		}
	}
	return t, offset, a, nil
}

// replayWriters records every batch from offset from to the log end.
func (r *Replica) replayWriters(from int64) error {
	for from < r.log.EndOffset() {
		recs, err := r.log.Read(from, 4<<20)
		if err != nil {
			return err
		}
		it := record.NewBatchIterator(recs.Data, false)
		for it.Next() {
			r.writers.table.record(it.Batch())
		}
		from = recs.NextOffset
		recs.Release()
		if it.Err() != nil {
			return it.Err()
		}
	}
	return nil
}
