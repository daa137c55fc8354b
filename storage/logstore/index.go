package logstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/storage/record"
)

// offsetEntry says a batch with base offset segmentBase+relOffset starts at
// byte pos of the segment.
type offsetEntry struct {
	relOffset uint32
	pos       uint32
}

// timeEntry says every batch before segmentBase+relOffset has a commit
// timestamp of at most maxTimestamp. relOffset always has an offsetEntry too,
// so a time lookup lands on an exact position.
type timeEntry struct {
	maxTimestamp int64
	relOffset    uint32
}

// segmentIndex holds a segment's sparse offset and time indexes. The writer
// adds entries as it appends; readers look up concurrently.
type segmentIndex struct {
	mu       sync.RWMutex
	offsets  []offsetEntry
	times    []timeEntry
	interval int

	// Writer-only bookkeeping (under the log's append lock).
	bytesSinceEntry int
	// maxTimestamp is over all batches of the segment, math.MinInt64 when
	// empty. The writer sets it; readers may skip a sealed segment by it.
	maxTimestamp atomic.Int64
}

func newSegmentIndex(interval int) *segmentIndex {
	ix := &segmentIndex{interval: interval}
	ix.maxTimestamp.Store(math.MinInt64)
	return ix
}

// maxTime is the newest commit timestamp in the segment, ms.
func (ix *segmentIndex) maxTime() int64 { return ix.maxTimestamp.Load() }

// observe records a batch appended at pos.
func (ix *segmentIndex) observe(base int64, b record.Batch, pos int64) {
	if ix.bytesSinceEntry >= ix.interval && pos > 0 {
		rel := uint32(b.BaseOffset() - base)
		ix.mu.Lock()
		ix.offsets = append(ix.offsets, offsetEntry{relOffset: rel, pos: uint32(pos)})
		if maxTS, n := ix.maxTime(), len(ix.times); maxTS != math.MinInt64 && (n == 0 || ix.times[n-1].maxTimestamp < maxTS) {
			ix.times = append(ix.times, timeEntry{maxTimestamp: maxTS, relOffset: rel})
		}
		ix.mu.Unlock()
		ix.bytesSinceEntry = 0
	}
	ix.bytesSinceEntry += len(b)
	ix.maxTimestamp.Store(max(ix.maxTime(), b.CommitTimestamp()))
}

// floor returns the position and relative offset of the last indexed batch
// whose base offset is at most rel, or the segment's first batch (0, 0).
func (ix *segmentIndex) floor(rel uint32) (pos int64, batchRel uint32) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	i := sort.Search(len(ix.offsets), func(i int) bool { return ix.offsets[i].relOffset > rel })
	if i == 0 {
		return 0, 0
	}
	return int64(ix.offsets[i-1].pos), ix.offsets[i-1].relOffset
}

// timeFloor returns a batch (position, relative offset) from which a scan
// finds the first batch with a timestamp of at least ts: the start of the
// last indexed run whose earlier batches are all older than ts.
func (ix *segmentIndex) timeFloor(ts int64) (pos int64, batchRel uint32) {
	ix.mu.RLock()
	i := sort.Search(len(ix.times), func(i int) bool { return ix.times[i].maxTimestamp >= ts })
	if i == 0 {
		ix.mu.RUnlock()
		return 0, 0
	}
	rel := ix.times[i-1].relOffset
	ix.mu.RUnlock()
	return ix.floor(rel)
}

// truncate drops the entries at or past pos.
func (ix *segmentIndex) truncate(pos int64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := sort.Search(len(ix.offsets), func(i int) bool { return int64(ix.offsets[i].pos) >= pos })
	if i < len(ix.offsets) {
		cut := ix.offsets[i].relOffset
		ix.offsets = ix.offsets[:i]
		j := sort.Search(len(ix.times), func(j int) bool { return ix.times[j].relOffset >= cut })
		ix.times = ix.times[:j]
	}
}

// reset empties the index, for a rebuild by observing every batch again.
func (ix *segmentIndex) reset() {
	ix.mu.Lock()
	ix.offsets, ix.times = ix.offsets[:0], ix.times[:0]
	ix.mu.Unlock()
	ix.bytesSinceEntry = 0
	ix.maxTimestamp.Store(math.MinInt64)
}

// Index file payloads (inside a checkpoint envelope with a CRC):
//
//	.index:     n × (relOffset u32, pos u32)
//	.timeindex: maxTimestamp i64, bytesSinceEntry u32, n × (maxTimestamp i64, relOffset u32)

func (ix *segmentIndex) marshalOffsets() []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	buf := make([]byte, 0, 8*len(ix.offsets))
	for _, e := range ix.offsets {
		buf = binary.BigEndian.AppendUint32(buf, e.relOffset)
		buf = binary.BigEndian.AppendUint32(buf, e.pos)
	}
	return buf
}

func (ix *segmentIndex) marshalTimes() []byte {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	buf := make([]byte, 0, 12+12*len(ix.times))
	buf = binary.BigEndian.AppendUint64(buf, uint64(ix.maxTime()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(ix.bytesSinceEntry))
	for _, e := range ix.times {
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.maxTimestamp))
		buf = binary.BigEndian.AppendUint32(buf, e.relOffset)
	}
	return buf
}

// load replaces the index with decoded files, checking that entries are
// ordered and inside a segment of size bytes.
func (ix *segmentIndex) load(offsets, times []byte, size int64) error {
	if len(offsets)%8 != 0 || len(times) < 12 || (len(times)-12)%12 != 0 {
		return fmt.Errorf("%w: index file sizes %d and %d", ErrCorrupt, len(offsets), len(times))
	}
	offs := make([]offsetEntry, 0, len(offsets)/8)
	for p := 0; p < len(offsets); p += 8 {
		e := offsetEntry{relOffset: binary.BigEndian.Uint32(offsets[p:]), pos: binary.BigEndian.Uint32(offsets[p+4:])}
		if int64(e.pos) >= size || (len(offs) > 0 && (e.relOffset <= offs[len(offs)-1].relOffset || e.pos <= offs[len(offs)-1].pos)) {
			return fmt.Errorf("%w: offset index entry %d out of order", ErrCorrupt, len(offs))
		}
		offs = append(offs, e)
	}
	maxTS := int64(binary.BigEndian.Uint64(times))
	since := int(binary.BigEndian.Uint32(times[8:]))
	ts := make([]timeEntry, 0, (len(times)-12)/12)
	for p := 12; p < len(times); p += 12 {
		e := timeEntry{maxTimestamp: int64(binary.BigEndian.Uint64(times[p:])), relOffset: binary.BigEndian.Uint32(times[p+8:])}
		if len(ts) > 0 && (e.maxTimestamp <= ts[len(ts)-1].maxTimestamp || e.relOffset <= ts[len(ts)-1].relOffset) {
			return fmt.Errorf("%w: time index entry %d out of order", ErrCorrupt, len(ts))
		}
		ts = append(ts, e)
	}
	ix.mu.Lock()
	ix.offsets, ix.times = offs, ts
	ix.mu.Unlock()
	ix.maxTimestamp.Store(maxTS)
	ix.bytesSinceEntry = since
	return nil
}
