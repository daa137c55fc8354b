package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The durable mark is the offset the log was durable to as of its last
// fsync, rewritten in place in a small file after every fsync that moved
// it (a write to the page cache, no fsync of its own: a few microseconds
// beside the fsync it follows; the file is opened for each write, so an
// idle log holds no descriptor for it). A killed process leaves it in the page
// cache, a crash of the machine may leave an older one; it is written only
// once what it names is durable, so it never names more than the disk
// held. On Open a log that ends before its mark lost batches that were
// durable (a disk that dropped fsynced writes, a file cut short by hand):
// the recovery point alone cannot tell, since it is checkpointed lazily.
// The log opens with what it has and says so (LostTail); the replica
// treats the range as damaged and fetches it again from a peer, instead of
// serving a log that lacks what it once acknowledged. A truncation lowers
// the mark before it cuts.
const durableMarkFile = "durable-end"

// durableMarkBytes: magic (4) | offset (8) | CRC-32C of the previous (4).
const durableMarkBytes = 16

type durableMark struct {
	path string
	buf  [durableMarkBytes]byte
	at   int64 // the offset last written, -1 when none
}

// openDurableMark reads the log's mark and returns the offset it holds, -1
// when it holds none (a new or older log, or a damaged file).
func openDurableMark(dir string) (*durableMark, int64, error) {
	m := &durableMark{path: filepath.Join(dir, durableMarkFile), at: -1}
	data, err := os.ReadFile(m.path)
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, fmt.Errorf("logstore: %w", err)
	}
	if len(data) == durableMarkBytes && binary.BigEndian.Uint32(data) == checkpointMagic &&
		crc32.Checksum(data[:12], castagnoli) == binary.BigEndian.Uint32(data[12:]) {
		m.at = int64(binary.BigEndian.Uint64(data[4:]))
	}
	return m, m.at, nil
}

// set records offset as the durable end.
func (m *durableMark) set(offset int64) error {
	if m == nil || offset == m.at {
		return nil
	}
	binary.BigEndian.PutUint32(m.buf[:], checkpointMagic)
	binary.BigEndian.PutUint64(m.buf[4:], uint64(offset))
	binary.BigEndian.PutUint32(m.buf[12:], crc32.Checksum(m.buf[:12], castagnoli))
	f, err := os.OpenFile(m.path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("logstore: durable mark: %w", err)
	}
	_, err = f.WriteAt(m.buf[:], 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("logstore: durable mark: %w", err)
	}
	m.at = offset
	return nil
}

// LostTail reports whether the log ended, when it was opened, before the
// offset its durable mark held, and from where its batches are missing.
func (l *Log) LostTail() (from int64, lost bool) {
	return l.lostFrom, l.lostFrom >= 0
}
