package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/floedb/floe/internal/pkgerr"
)

// ErrNotSealed: OpenSealed was asked for a segment that is not (or no
// longer) a sealed segment of the log.
var ErrNotSealed = pkgerr.New("logstore", "no such sealed segment")

// SealedSegment is a sealed segment opened for copying elsewhere (tiering
// uploads it). Its bytes stay readable until Close even if retention
// deletes the segment meanwhile: the file is open.
type SealedSegment struct {
	BaseOffset int64
	// NextOffset is the offset after its last batch: the next segment's
	// base.
	NextOffset int64
	// Bytes is the length of its batches; the file holds nothing else.
	Bytes int64
	// MaxTimestamp is its newest commit timestamp, ms.
	MaxTimestamp int64
	// Epochs are the leader epochs of its batches: the one in effect at
	// BaseOffset (StartOffset clamped up to BaseOffset), then every one
	// that starts inside it.
	Epochs []EpochEntry
	// Index is its offset and time index.
	Index *SegmentIndex

	file *os.File
}

// Data reads the segment's batches.
func (s *SealedSegment) Data() *io.SectionReader { return io.NewSectionReader(s.file, 0, s.Bytes) }

// Close releases the file.
func (s *SealedSegment) Close() error { return s.file.Close() }

// OpenSealed opens the sealed segment starting at base. A segment that is
// active, deleted or never existed is ErrNotSealed.
func (l *Log) OpenSealed(base int64) (*SealedSegment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	segs := *l.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base >= base })
	if i >= len(segs)-1 || segs[i].base != base {
		return nil, fmt.Errorf("%w: base offset %d", ErrNotSealed, base)
	}
	s := segs[i]
	f, err := os.Open(s.path(logSuffix))
	if err != nil {
		return nil, pkgerr.Errorf("logstore", "open sealed segment %d: %w", base, err)
	}
	return &SealedSegment{BaseOffset: s.base, NextOffset: s.nextOffset, Bytes: s.size, MaxTimestamp: s.index.maxTime(),
		Epochs: epochsWithin(l.epochs.snapshot(), s.base, s.nextOffset), Index: &SegmentIndex{base: s.base, ix: s.index}, file: f}, nil
}

// epochsWithin returns the epochs of the batches in [base, next): the one
// in effect at base, clamped to start there, then those starting inside.
func epochsWithin(entries []EpochEntry, base, next int64) []EpochEntry {
	var out []EpochEntry
	for i, e := range entries {
		endsAfterBase := i+1 == len(entries) || entries[i+1].StartOffset > base
		switch {
		case e.StartOffset >= next:
			return out
		case e.StartOffset <= base && endsAfterBase:
			out = append(out, EpochEntry{Epoch: e.Epoch, StartOffset: base})
		case e.StartOffset > base:
			out = append(out, e)
		}
	}
	return out
}

// SegmentIndex is a sealed segment's sparse offset and time index, as the
// log keeps it beside the segment and tiering stores it beside a remote
// copy, so a reader of the copy can start near an offset or a timestamp
// without reading what comes before.
type SegmentIndex struct {
	base int64
	ix   *segmentIndex
}

// Marshal encodes the index: a checkpoint envelope (magic, length, CRC)
// around the offset-index length (u32), the .index payload and the
// .timeindex payload.
func (x *SegmentIndex) Marshal() []byte {
	offs := x.ix.marshalOffsets()
	payload := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(offs)), uint32(len(offs)))
	payload = append(payload, offs...)
	return encodeCheckpoint(append(payload, x.ix.marshalTimes()...))
}

// DecodeSegmentIndex reads what Marshal wrote for the segment starting at
// base whose batches are size bytes; damage is ErrCorrupt.
func DecodeSegmentIndex(base, size int64, data []byte) (*SegmentIndex, error) {
	payload, err := decodeCheckpoint("segment index", data)
	if err != nil {
		return nil, err
	}
	if len(payload) < 4 || int(binary.BigEndian.Uint32(payload)) > len(payload)-4 {
		return nil, fmt.Errorf("%w: segment index: bad offset-index length", ErrCorrupt)
	}
	n := int(binary.BigEndian.Uint32(payload))
	ix := newSegmentIndex(DefaultIndexIntervalBytes)
	if err := ix.load(payload[4:4+n], payload[4+n:], size); err != nil {
		return nil, err
	}
	return &SegmentIndex{base: base, ix: ix}, nil
}

// PositionFor is the byte position of a batch at or before offset, from
// which reading forward reaches the batch holding offset.
func (x *SegmentIndex) PositionFor(offset int64) int64 {
	if offset <= x.base {
		return 0
	}
	pos, _ := x.ix.floor(uint32(min(offset-x.base, int64(^uint32(0)))))
	return pos
}

// PositionForTime is the byte position from which reading forward finds
// the first batch with a commit timestamp of at least ts (ms).
func (x *SegmentIndex) PositionForTime(ts int64) int64 {
	pos, _ := x.ix.timeFloor(ts)
	return pos
}

// MaxTimestamp is the segment's newest commit timestamp, ms.
func (x *SegmentIndex) MaxTimestamp() int64 { return x.ix.maxTime() }
