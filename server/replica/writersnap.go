package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/floedb/floe/storage/record"
)

// The writer-state snapshot lets a replica reopen without rescanning its log
// for idempotent writers: the writer table as of a log offset, replayed
// forward from there. It is taken periodically and on close under the
// produce lock (so it matches the log exactly at that offset).
//
// Layout (big-endian): offset i64 | writers u32 | per writer: id i64,
// n u8, next u8, 5 × (seq i32, base i64, last i64, ts i64) | CRC-32C of all
// before.
const (
	writerSnapFile     = "writer-state"
	writerSnapInterval = 10 // housekeeping rounds between snapshots
	writerEntryBytes   = 8 + 1 + 1 + writersRemembered*(4+8+8+8)
)

var errBadWriterSnap = errors.New("replica: damaged writer-state snapshot")

// saveWritersLocked writes the snapshot; callers hold produceMu.
func (r *Replica) saveWritersLocked() error {
	return writeWriterSnap(r.dir, encodeWriters(r.writers, r.log.EndOffset()))
}

// encodeWriters renders a writer table as of a log offset.
func encodeWriters(t *writerTable, offset int64) []byte {
	buf := make([]byte, 0, 12+len(t.writers)*writerEntryBytes+4)
	buf = binary.BigEndian.AppendUint64(buf, uint64(offset))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(t.writers)))
	for id, w := range t.writers {
		buf = binary.BigEndian.AppendUint64(buf, uint64(id))
		buf = append(buf, byte(w.n), byte(w.next))
		for _, b := range w.batches {
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.seq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.base))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.last))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.timestampMs))
		}
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

// writeWriterSnap replaces the snapshot file (not fsynced: losing it only
// means a rescan on the next open).
func writeWriterSnap(dir string, buf []byte) error {
	tmp := filepath.Join(dir, writerSnapFile+".tmp")
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, writerSnapFile))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// loadWriters reads the snapshot: the writer table and the offset it covers.
func loadWriters(dir string) (*writerTable, int64, error) {
	buf, err := os.ReadFile(filepath.Join(dir, writerSnapFile))
	if err != nil {
		return nil, 0, err
	}
	if len(buf) < 16 || crc32.Checksum(buf[:len(buf)-4], castagnoli) != binary.BigEndian.Uint32(buf[len(buf)-4:]) {
		return nil, 0, errBadWriterSnap
	}
	offset := int64(binary.BigEndian.Uint64(buf))
	n := int(binary.BigEndian.Uint32(buf[8:]))
	body := buf[12 : len(buf)-4]
	if len(body) != n*writerEntryBytes {
		return nil, 0, fmt.Errorf("%w: %d writers in %d bytes", errBadWriterSnap, n, len(body))
	}
	t := newWriterTable()
	for i := range n {
		e := body[i*writerEntryBytes:]
		w := &writerState{n: int(e[8]), next: int(e[9])}
		if w.n > writersRemembered || w.next >= writersRemembered {
			return nil, 0, errBadWriterSnap
		}
		p := e[10:]
		for j := range writersRemembered {
			w.batches[j] = writerBatch{
				seq:         int32(binary.BigEndian.Uint32(p)),
				base:        int64(binary.BigEndian.Uint64(p[4:])),
				last:        int64(binary.BigEndian.Uint64(p[12:])),
				timestampMs: int64(binary.BigEndian.Uint64(p[20:])),
			}
			p = p[28:]
		}
		t.writers[int64(binary.BigEndian.Uint64(e))] = w
	}
	return t, offset, nil
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
			r.writers.record(it.Batch())
		}
		from = recs.NextOffset
		recs.Release()
		if it.Err() != nil {
			return it.Err()
		}
	}
	return nil
}
