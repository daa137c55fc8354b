package logstore

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/floedb/floe/internal/pkgerr"
	"golang.org/x/sys/unix"
)

// errSegmentGone: the segment was removed (retention, truncation) or its
// log closed; a reader loads the segment list again.
var errSegmentGone = pkgerr.New("logstore", "segment gone")

// mapping is one opening of a segment file: the descriptor and a read-only
// mapping of it. A sealed segment's descriptor is read-only and its mapping
// covers the file; the active segment's descriptor is writable and its
// mapping covers the size the segment may grow to (pages past the file's
// end are never touched). It is reference-counted:
// the segment holds one reference while it is the segment's current
// mapping, and every user (a reader's Records, a write, an fsync) one more,
// so a mapping is unmapped only once nobody uses it, whoever closed it.
type mapping struct {
	file *os.File
	data []byte
	// sealed and nextOffset are the segment's state when this mapping was
	// made: a sealed segment's batches must end exactly at nextOffset.
	sealed     bool
	nextOffset int64
	refs       refCount
}

// openMappingLocked opens s's file in the mode its state asks for. Holds
// s.openMu.
func (s *segment) openMappingLocked() (*mapping, error) {
	flags, mapLen := os.O_RDWR, s.activeMapBytes
	if s.sealed {
		flags, mapLen = os.O_RDONLY, s.sealedBytes
	}
	f, err := os.OpenFile(s.path(logSuffix), flags, 0)
	if err != nil {
		return nil, pkgerr.Errorf("logstore", "open segment: %w", err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(roundUpPage(max(mapLen, 1))), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, pkgerr.Errorf("logstore", "mmap %s: %w", s.path(logSuffix), err)
	}
	m := &mapping{file: f, data: data, sealed: s.sealed}
	if s.sealed {
		// Only a sealed segment's end is fixed (and read); the active
		// one's moves under the log's lock, which readers do not hold.
		m.nextOffset = s.nextOffset
	}
	m.refs.init()
	return m, nil
}

func (m *mapping) release() {
	if m.refs.drop() {
		_ = unix.Munmap(m.data)
		_ = m.file.Close()
	}
}

// acquire returns the segment's mapping with a reference the caller
// releases, opening the file if it is closed. errSegmentGone: the segment
// was removed or its log closed.
func (s *segment) acquire() (*mapping, error) {
	if m := s.cur.Load(); m != nil && m.refs.take() {
		s.touch()
		return m, nil
	}
	return s.acquireSlow(false)
}

// touch sets the CLOCK bit, writing the shared word only when it changes.
func (s *segment) touch() {
	if !s.used.Load() {
		s.used.Store(true)
	}
}

// acquireForWrite is acquire for the appender, who is about to write: the
// segment counts as dirty until an fsync covers what it holds (markClean),
// and a dirty segment keeps its mapping open. Closing a descriptor with
// unsynced writes and syncing through a new one would make the fsync's
// error report depend on the kernel version; keeping it open avoids the
// question.
func (s *segment) acquireForWrite() (*mapping, error) { return s.acquireSlow(true) }

func (s *segment) acquireSlow(write bool) (*mapping, error) {
	s.openMu.Lock()
	if s.closed {
		s.openMu.Unlock()
		return nil, errSegmentGone
	}
	if write {
		if s.sealed {
			panic(fmt.Sprintf("logstore: write to sealed segment %d", s.base))
		}
		s.dirty = true
	}
	m := s.cur.Load()
	opened := false
	if m == nil || !m.refs.take() {
		// A current mapping always has the segment's reference (it is
		// dropped only after cur is cleared under openMu), so take fails
		// only when there is none.
		var err error
		if m, err = s.openMappingLocked(); err != nil {
			s.openMu.Unlock()
			return nil, err
		}
		m.refs.take()
		s.cur.Store(m)
		opened = true
	}
	s.openMu.Unlock()
	s.touch()
	if opened {
		s.cache.add(s)
	}
	return m, nil
}

// markClean records that an fsync covered everything written to s: its
// mapping may close when idle.
func (s *segment) markClean() {
	s.openMu.Lock()
	s.dirty = false
	s.openMu.Unlock()
}

// detachIdle takes s's current mapping away unless s is dirty; the caller
// releases what it returns (nil when nothing was open). ok false: dirty.
func (s *segment) detachIdle() (m *mapping, ok bool) {
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.dirty && !s.closed {
		return nil, false
	}
	return s.cur.Swap(nil), true
}

// setSealed switches s between sealed and active. The current mapping (of
// the other mode) is detached: its users keep it until they release, and
// the next acquire opens the file in the new mode. Sealing requires that s
// was fsynced whole.
func (s *segment) setSealed(sealed bool, activeMapBytes int64) {
	s.openMu.Lock()
	if sealed && s.dirty {
		s.openMu.Unlock()
		panic(fmt.Sprintf("logstore: sealing segment %d with unsynced writes", s.base))
	}
	s.sealed = sealed
	s.sealedBytes = s.size
	s.activeMapBytes = max(activeMapBytes, s.size)
	m := s.cur.Swap(nil)
	s.openMu.Unlock()
	if m != nil {
		m.release()
	}
}

// close ends s's life in its log (removed, or the log closed): no more
// opens, and its mapping goes once the last reader releases it.
func (s *segment) close() {
	s.openMu.Lock()
	s.closed = true
	m := s.cur.Swap(nil)
	s.openMu.Unlock()
	s.cache.forget(s)
	if m != nil {
		m.release()
	}
}

// refCount counts the references to a mapping; it starts at one.
type refCount struct{ n atomic.Int32 }

func (r *refCount) init() { r.n.Store(1) }

// take adds a reference unless the count already dropped to zero.
func (r *refCount) take() bool {
	for {
		n := r.n.Load()
		if n <= 0 {
			return false
		}
		if r.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// drop removes a reference and reports whether it was the last.
func (r *refCount) drop() bool {
	n := r.n.Add(-1)
	if n < 0 {
		panic("logstore: mapping released more often than acquired")
	}
	return n == 0
}
