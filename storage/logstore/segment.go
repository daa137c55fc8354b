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
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/internal/pkgerr"
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
// readable and a mapping (see acquire), which opens the file when it is
// not open: the segments of a node keep their files open only as long as
// the node's segmentCache lets them.
type segment struct {
	base  int64
	dir   string
	index *segmentIndex
	cache *segmentCache

	size        int64 // bytes written
	allocated   int64 // file size, preallocated ahead of size
	nextOffset  int64 // offset after the last batch written
	firstAppend int64 // commit timestamp of the first batch, ms; 0 when empty
	preallocate int64 // the largest chunk the file grows by

	// readable is how many bytes readers may see: everything written, or
	// everything fsynced under SyncAlways.
	readable atomic.Int64
	// written is how many bytes are wholly written, fsynced or not: what
	// a leader may already send its followers (see Log.ReadUnflushed).
	written atomic.Int64

	// cur is the open mapping, nil while the file is closed. openMu
	// serializes opening and detaching it, and guards the fields below it;
	// the appender writes sealed under both its lock and openMu.
	cur            atomic.Pointer[mapping]
	openMu         sync.Mutex
	sealed         bool
	sealedBytes    int64 // what a sealed mapping covers: the file
	activeMapBytes int64 // what an active mapping covers: the size it may grow to
	dirty          bool  // written since the last fsync that covered it
	closed         bool  // removed, or its log closed

	// used is the CLOCK bit of the segment cache; slot is its place in
	// the cache's ring (-1: not there), under the cache's lock.
	used atomic.Bool
	slot int
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

// newSegment describes the segment file for base without opening it.
func newSegment(l *Log, base int64) *segment {
	return &segment{base: base, dir: l.cfg.Dir, nextOffset: base, preallocate: l.cfg.PreallocateBytes,
		index: newSegmentIndex(l.cfg.IndexIntervalBytes), cache: l.sched.segments, slot: -1,
		activeMapBytes: l.cfg.SegmentMaxBytes}
}

// createSegment creates the (empty, active) segment file for base.
func createSegment(l *Log, base int64) (*segment, error) {
	s := newSegment(l, base)
	if err := s.create(); err != nil {
		return nil, err
	}
	return s, nil
}

// create creates s's (empty) file.
func (s *segment) create() error {
	f, err := os.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return pkgerr.Errorf("logstore", "create segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return pkgerr.Errorf("logstore", "create segment: %w", err)
	}
	return nil
}

func roundUpPage(n int64) int64 {
	page := int64(os.Getpagesize())
	return (n + page - 1) / page * page
}

// minPreallocateBytes is the first chunk a segment file grows by. Each
// later chunk is as large as the file already is, up to PreallocateBytes:
// a log that holds little reserves little disk (a node holds thousands of
// mostly idle logs), while a busy one soon grows in full chunks and rarely
// makes an fdatasync carry a file-size change.
const minPreallocateBytes = 64 << 10

// write appends b at the write position through m (acquireForWrite),
// growing the preallocation first.
func (s *segment) write(m *mapping, b []byte) error {
	end := s.size + int64(len(b))
	if end > int64(len(m.data)) {
		return pkgerr.Errorf("logstore", "segment %d: write past its mapping (%d > %d)", s.base, end, len(m.data))
	}
	if end > s.allocated {
		chunk := min(s.preallocate, max(minPreallocateBytes, s.allocated))
		grow := min(max(end, s.allocated+chunk), int64(len(m.data)))
		if err := Allocate(m.file, s.allocated, grow); err != nil {
			return err
		}
		s.allocated = grow
	}
	if _, err := m.file.WriteAt(b, s.size); err != nil {
		return pkgerr.Errorf("logstore", "write segment %d: %w", s.base, err)
	}
	s.size = end
	return nil
}

// Allocate extends f from oldSize to newSize with zeros, reserving the
// blocks when the file system can: how segment files grow ahead of their
// writes (and what `floe bench floor` measures its fsyncs on).
func Allocate(f *os.File, oldSize, newSize int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, oldSize, newSize-oldSize)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = f.Truncate(newSize)
	}
	if err != nil {
		return pkgerr.Errorf("logstore", "preallocate %s to %d bytes: %w", f.Name(), newSize, err)
	}
	return nil
}

// batchAt checks the header of the batch at byte pos, which must end by
// byte end and start at offset: a *CorruptError names offset otherwise. The
// base offset is outside the batch checksum, so it is checked here.
func (s *segment) batchAt(data []byte, pos, end, offset int64) (record.Batch, error) {
	b, err := record.CheckHeader(data[pos:end])
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
	m, err := s.acquire()
	if errors.Is(err, errSegmentGone) {
		// Truncation removed it, or Close fsynced it before closing it:
		// nothing of it is left to make durable.
		return nil
	}
	if err != nil {
		return err
	}
	defer m.release()
	if full {
		return m.file.Sync()
	}
	return unix.Fdatasync(int(m.file.Fd()))
}

// trim cuts the file to its data; the caller fsyncs (full) to make the
// length durable.
func (s *segment) trim() error {
	m, err := s.acquireForWrite()
	if err != nil {
		return err
	}
	defer m.release()
	if err := m.file.Truncate(s.size); err != nil {
		return pkgerr.Errorf("logstore", "trim segment %d: %w", s.base, err)
	}
	s.allocated = s.size
	return nil
}

// zeroFrom overwrites [pos, size) with zeros, keeping the file length (a
// reader may still hold a view of those bytes); the caller fsyncs.
func (s *segment) zeroFrom(pos int64) error {
	m, err := s.acquireForWrite()
	if err != nil {
		return err
	}
	defer m.release()
	zeros := make([]byte, min(s.size-pos, 1<<20))
	for p := pos; p < s.size; p += int64(len(zeros)) {
		n := min(int64(len(zeros)), s.size-p)
		if _, err := m.file.WriteAt(zeros[:n], p); err != nil {
			return pkgerr.Errorf("logstore", "zero segment %d tail: %w", s.base, err)
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

// remove closes the segment and unlinks its files; readers still holding
// its mapping keep it until they release. Closed first: a reader that
// picked the segment before it left the list then finds it gone
// (errSegmentGone) and reloads the list, where opening the unlinked file
// would fail with an error no caller can act on.
func (s *segment) remove() error {
	s.close()
	err := os.Remove(s.path(logSuffix))
	s.removeIndexes()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return pkgerr.Errorf("logstore", "delete segment %d: %w", s.base, err)
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
		return nil, pkgerr.Errorf("logstore", "%w", err)
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
