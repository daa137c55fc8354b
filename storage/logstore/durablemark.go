package logstore

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
)

// The durable mark is the offset the log was durable to as of its last
// fsync, rewritten in place in a small file after every fsync that moved
// it (a write to the page cache, no fsync of its own). The logs of a node
// keep at most openMarkFiles of these files open between writes (the most
// recently written, markFiles): a busy log rewrites its mark with one
// pwrite, under a microsecond, where opening and closing the file each
// time took seven syscalls and about 6% of a node's CPU under small
// writes; an idle log's file is closed once others need the room. A
// killed process leaves the mark in the page cache, a crash of the machine
// may leave an older one; it is written only once what it names is
// durable, so it never names more than the disk held. On Open a log that
// ends before its mark lost batches that were durable (a disk that dropped
// fsynced writes, a file cut short by hand): the recovery point alone
// cannot tell, since it is checkpointed lazily. The log opens with what it
// has and says so (LostTail); the replica treats the range as damaged and
// fetches it again from a peer, instead of serving a log that lacks what
// it once acknowledged.
//
// A truncation (or reset) lowers the mark, and that write is fsynced before
// anything is cut: otherwise a power loss could keep the higher mark from
// the page cache's earlier flush while the cut, which reaches the disk
// whenever the kernel writes it back, is kept too, and the next Open would
// report batches the truncation removed on purpose as lost. Between two
// lowerings the mark only grows, so the disk holds no value above the last
// one written, and a cut needs a lowering only when it goes below that.
const durableMarkFile = "durable-end"

// durableMarkBytes: magic (4) | offset (8) | CRC-32C of the previous (4).
const durableMarkBytes = 16

// openMarkFiles bounds the durable-mark files the logs of one Scheduler
// keep open between writes.
const openMarkFiles = 128

type durableMark struct {
	path  string
	files *markFiles
	buf   [durableMarkBytes]byte
	at    int64 // the offset last written, -1 when none

	mu     sync.Mutex // guards f and closed: set and an eviction by another log
	f      *os.File   // open between writes while in files; nil: closed
	closed bool       // the log closed: no more writes
	elem   *list.Element

	// observe, when set (tests only), learns every offset written to the
	// file and whether that write was fsynced, so a test can tell what a
	// power loss may leave on disk.
	observe func(offset int64, synced bool)
}

// markFiles is the set of durable-mark files a Scheduler's logs keep
// open, the most recently written first.
type markFiles struct {
	mu  sync.Mutex
	max int
	lru list.List // of *durableMark; a mark's elem is under mu
}

func newMarkFiles(max int) *markFiles { return &markFiles{max: max} }

// touch makes m the most recently written; past the bound, the least
// recently written mark's file is closed.
func (c *markFiles) touch(m *durableMark) {
	c.mu.Lock()
	if m.elem != nil {
		c.lru.MoveToFront(m.elem)
	} else {
		m.elem = c.lru.PushFront(m)
	}
	var victim *durableMark
	if c.lru.Len() > c.max {
		victim = c.lru.Remove(c.lru.Back()).(*durableMark)
		victim.elem = nil
	}
	c.mu.Unlock()
	if victim != nil {
		victim.closeFile()
	}
}

// forget drops m from the set.
func (c *markFiles) forget(m *durableMark) {
	c.mu.Lock()
	if m.elem != nil {
		c.lru.Remove(m.elem)
		m.elem = nil
	}
	c.mu.Unlock()
}

// openDurableMark reads the log's mark and returns the offset it holds, -1
// when it holds none (a new or older log, or a damaged file). Its file is
// kept open among files.
func openDurableMark(dir string, files *markFiles) (*durableMark, int64, error) {
	m := &durableMark{path: filepath.Join(dir, durableMarkFile), files: files, at: -1}
	data, err := os.ReadFile(m.path)
	if err != nil && !os.IsNotExist(err) {
		return nil, 0, pkgerr.Errorf("logstore", "%w", err)
	}
	if len(data) == durableMarkBytes && binary.BigEndian.Uint32(data) == checkpointMagic &&
		crc32.Checksum(data[:12], castagnoli) == binary.BigEndian.Uint32(data[12:]) {
		m.at = int64(binary.BigEndian.Uint64(data[4:]))
	}
	return m, m.at, nil
}

// set records offset as the durable end, in the page cache. Callers
// serialize their sets (the log's syncMu); an eviction may close the file
// meanwhile.
func (m *durableMark) set(offset int64) error { return m.write(offset, false) }

// lower records offset, below the mark, and fsyncs it before it returns:
// see durableMarkFile for why a lowered mark must be on disk before the
// cut it announces.
func (m *durableMark) lower(offset int64) error { return m.write(offset, true) }

func (m *durableMark) write(offset int64, durable bool) error {
	if m == nil || offset == m.at {
		return nil
	}
	binary.BigEndian.PutUint32(m.buf[:], checkpointMagic)
	binary.BigEndian.PutUint64(m.buf[4:], uint64(offset))
	binary.BigEndian.PutUint32(m.buf[12:], crc32.Checksum(m.buf[:12], castagnoli))
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil // an fsync that finished after Close: Close wrote the mark
	}
	err := m.writeLocked()
	if err == nil && durable {
		if err = m.f.Sync(); err != nil {
			m.closeFileLocked()
			err = fmt.Errorf("%w: %v", ErrSyncFailed, err)
		}
	}
	m.mu.Unlock()
	if err != nil {
		m.files.forget(m)
		return pkgerr.Errorf("logstore", "durable mark: %w", err)
	}
	m.files.touch(m)
	m.at = offset
	if m.observe != nil {
		m.observe(offset, durable)
	}
	return nil
}

// writeLocked writes buf at the start of the file, opening it if it is
// closed; a failed write closes it, so the next set starts afresh.
func (m *durableMark) writeLocked() error {
	if m.f == nil {
		f, err := os.OpenFile(m.path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		m.f = f
	}
	if _, err := m.f.WriteAt(m.buf[:], 0); err != nil {
		m.f.Close()
		m.f = nil
		return err
	}
	return nil
}

// closeFile closes the mark's file if it is open; the next set opens it
// again.
func (m *durableMark) closeFile() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closeFileLocked()
}

func (m *durableMark) closeFileLocked() {
	if m.f != nil {
		m.f.Close()
		m.f = nil
	}
}

// close releases the mark's file for good (the log closes).
func (m *durableMark) close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.closed = true // a set that starts after this writes nothing
	m.closeFileLocked()
	m.mu.Unlock()
	m.files.forget(m)
}

// LostTail reports whether the log ended, when it was opened, before the
// offset its durable mark held, and from where its batches are missing.
func (l *Log) LostTail() (from int64, lost bool) {
	return l.lostFrom, l.lostFrom >= 0
}

// lowerDurableMark lowers the mark to offset, durably, when it names more:
// a truncation or reset calls it before it removes anything. A failure
// fails the log (the cut must not go ahead, and the mark's state on disk
// is unknown).
func (l *Log) lowerDurableMark(offset int64) error {
	l.syncMu.Lock()
	var err error
	if l.mark != nil && l.mark.at > offset {
		err = l.mark.lower(offset)
	}
	l.syncMu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	return nil
}
