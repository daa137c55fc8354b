package logstore

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/floedb/floe/storage/record"
	"golang.org/x/sys/unix"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	tmpSuffix       = ".tmp"
	deletedSuffix   = ".deleted"
)

// segmentName is the file name stem for a base offset.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName returns the base offset of a "<base>.log" file name.
func parseSegmentName(name string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	return base, err == nil && base >= 0
}

// segment is one file of the log. The appender (holding the log's append
// lock) owns size, allocated, nextOffset and firstAppend; readers use
// readable and the mapping.
type segment struct {
	base  int64
	dir   string
	file  *os.File
	data  []byte // read-only mapping of the whole potential segment
	index *segmentIndex

	size        int64 // bytes written
	allocated   int64 // file size, preallocated ahead of size
	nextOffset  int64 // offset after the last batch written
	firstAppend int64 // commit timestamp of the first batch, ms; 0 when empty
	sealed      bool
	preallocate int64

	// readable is how many bytes readers may see: everything written, or
	// everything fsynced under SyncAlways.
	readable atomic.Int64
	// written is how many bytes are wholly written, fsynced or not: what
	// a leader may already send its followers (see Log.ReadUnflushed).
	written atomic.Int64
	// refs counts the log's reference plus one per outstanding reader; the
	// mapping and file close when it drops to zero.
	refs atomic.Int32
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

// openSegment opens (or creates) the segment file for base and maps mapLen
// bytes of it.
func openSegment(dir string, base int64, create bool, mapLen, preallocate int64, indexInterval int) (*segment, error) {
	s := &segment{base: base, dir: dir, nextOffset: base, preallocate: preallocate, index: newSegmentIndex(indexInterval)}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(s.path(logSuffix), flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logstore: open segment: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("logstore: stat segment: %w", err)
	}
	s.file = f
	s.allocated = st.Size()
	mapLen = roundUpPage(max(mapLen, s.allocated, 1))
	s.data, err = unix.Mmap(int(f.Fd()), 0, int(mapLen), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("logstore: mmap %s: %w", s.path(logSuffix), err)
	}
	s.refs.Store(1)
	return s, nil
}

// reopen returns a new segment object for s's file, mapped to mapLen bytes
// (at least the file), carrying s's state over. s keeps serving the readers
// that hold it; the caller releases the log's reference to it.
func (s *segment) reopen(mapLen int64) (*segment, error) {
	n, err := openSegment(s.dir, s.base, false, mapLen, s.preallocate, s.index.interval)
	if err != nil {
		return nil, err
	}
	n.index = s.index
	n.size, n.nextOffset, n.firstAppend, n.sealed = s.size, s.nextOffset, s.firstAppend, s.sealed
	n.readable.Store(s.readable.Load())
	n.written.Store(s.written.Load())
	return n, nil
}

func roundUpPage(n int64) int64 {
	page := int64(os.Getpagesize())
	return (n + page - 1) / page * page
}

// acquire takes a reader reference; false when the segment is already gone.
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference, unmapping and closing on the last one.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		_ = unix.Munmap(s.data)
		_ = s.file.Close()
	}
}

// write appends b at the write position, growing the preallocation first.
func (s *segment) write(b []byte) error {
	end := s.size + int64(len(b))
	if end > int64(len(s.data)) {
		return fmt.Errorf("logstore: segment %d: write past its mapping (%d > %d)", s.base, end, len(s.data))
	}
	if end > s.allocated {
		grow := min(max(end, s.allocated+s.preallocate), int64(len(s.data)))
		if err := allocate(s.file, s.allocated, grow); err != nil {
			return err
		}
		s.allocated = grow
	}
	if _, err := s.file.WriteAt(b, s.size); err != nil {
		return fmt.Errorf("logstore: write segment %d: %w", s.base, err)
	}
	s.size = end
	return nil
}

// allocate extends f to newSize with zeros, reserving the blocks when the
// file system can.
func allocate(f *os.File, oldSize, newSize int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, oldSize, newSize-oldSize)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = f.Truncate(newSize)
	}
	if err != nil {
		return fmt.Errorf("logstore: preallocate %s to %d bytes: %w", f.Name(), newSize, err)
	}
	return nil
}

// batchAt checks the header of the batch at byte pos, which must end by
// byte end and start at offset: a *CorruptError names offset otherwise. The
// base offset is outside the batch checksum, so it is checked here.
func (s *segment) batchAt(pos, end, offset int64) (record.Batch, error) {
	b, err := record.CheckHeader(s.data[pos:end])
	if err == nil && b.BaseOffset() != offset {
		err = fmt.Errorf("base offset %d where offset %d belongs", b.BaseOffset(), offset)
	}
	if err != nil {
		return nil, &CorruptError{Offset: offset, SegmentBase: s.base, Position: pos, Err: err}
	}
	return b, nil
}

// checkBatch verifies the checksum of b, found at byte pos by batchAt.
func (s *segment) checkBatch(b record.Batch, pos int64) error {
	if _, err := record.Check(b); err != nil {
		return &CorruptError{Offset: b.BaseOffset(), SegmentBase: s.base, Position: pos, Err: err}
	}
	return nil
}

// fsync makes everything written durable: fdatasync, or a full fsync when
// the file's length must be durable too. The log calls it through
// Log.syncSegment, which owns what a failure means.
func (s *segment) fsync(full bool) error {
	if full {
		return s.file.Sync()
	}
	return unix.Fdatasync(int(s.file.Fd()))
}

// trim cuts the file to its data; the caller fsyncs (full) to make the
// length durable.
func (s *segment) trim() error {
	if err := s.file.Truncate(s.size); err != nil {
		return fmt.Errorf("logstore: trim segment %d: %w", s.base, err)
	}
	s.allocated = s.size
	return nil
}

// zeroFrom overwrites [pos, size) with zeros, keeping the file length (a
// reader may still hold a view of those bytes); the caller fsyncs.
func (s *segment) zeroFrom(pos int64) error {
	zeros := make([]byte, min(s.size-pos, 1<<20))
	for p := pos; p < s.size; p += int64(len(zeros)) {
		n := min(int64(len(zeros)), s.size-p)
		if _, err := s.file.WriteAt(zeros[:n], p); err != nil {
			return fmt.Errorf("logstore: zero segment %d tail: %w", s.base, err)
		}
	}
	s.size = pos
	return nil
}

// writeIndexes persists the sealed segment's indexes.
func (s *segment) writeIndexes() error {
	name := segmentName(s.base)
	if err := writeCheckpoint(s.dir, name+indexSuffix, s.index.marshalOffsets()); err != nil {
		return err
	}
	return writeCheckpoint(s.dir, name+timeIndexSuffix, s.index.marshalTimes())
}

// loadIndexes reads the sealed segment's index files.
func (s *segment) loadIndexes() error {
	name := segmentName(s.base)
	offs, err := readCheckpoint(s.dir, name+indexSuffix)
	if err != nil {
		return err
	}
	times, err := readCheckpoint(s.dir, name+timeIndexSuffix)
	if err != nil {
		return err
	}
	return s.index.load(offs, times, s.size)
}

// removeIndexes deletes the index files (the segment became active again).
func (s *segment) removeIndexes() {
	_ = os.Remove(s.path(indexSuffix))
	_ = os.Remove(s.path(timeIndexSuffix))
}

// remove unlinks the segment's files and drops the log's reference; readers
// still holding it keep the mapping until they release.
func (s *segment) remove() error {
	err := os.Remove(s.path(logSuffix))
	s.removeIndexes()
	s.release()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("logstore: delete segment %d: %w", s.base, err)
	}
	return nil
}

// SegmentFile names one segment file of a log folder.
type SegmentFile struct {
	BaseOffset int64
	Path       string
}

// ListSegments returns the segment files in dir, oldest first, without
// opening the log: for tools that inspect a folder another process may own.
func ListSegments(dir string) ([]SegmentFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: %w", err)
	}
	var out []SegmentFile
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, SegmentFile{BaseOffset: base, Path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(out, func(a, b SegmentFile) int { return cmp.Compare(a.BaseOffset, b.BaseOffset) })
	return out, nil
}
