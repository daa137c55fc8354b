package logstore

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/floedb/floe/storage/record"
)

// Records is a zero-copy view of whole batches read from one segment. Data
// aliases the segment's mapping: it stays valid, even if retention or
// truncation removes the segment meanwhile, until Release.
type Records struct {
	// Data holds whole batches, laid end to end; empty when there is
	// nothing to read at the offset yet.
	Data []byte
	// FirstOffset is the base offset of the first batch (it may be below
	// the offset asked for, which can fall inside a batch).
	FirstOffset int64
	// NextOffset is the offset after the last batch: where to read next.
	NextOffset int64

	m        *mapping
	released atomic.Bool
}

// Release gives the view back. Data must not be used afterwards. Calling it
// more than once is harmless.
func (r *Records) Release() {
	if r.m != nil && r.released.CompareAndSwap(false, true) {
		r.m.release()
	}
}

// Batches iterates the batches of the view.
func (r *Records) Batches() record.BatchIterator {
	return record.NewBatchIterator(r.Data, false)
}

// Read returns whole batches starting with the one that holds offset from,
// up to maxBytes (but always at least one batch when there is one). from
// equal to the end offset returns an empty view; beyond it, or below the
// start offset, ErrOffsetOutOfRange.
func (l *Log) Read(from int64, maxBytes int) (*Records, error) {
	return l.ReadBelow(from, math.MaxInt64, maxBytes)
}

// ReadBelow is Read limited to batches that end below limit (a high
// watermark).
func (l *Log) ReadBelow(from, limit int64, maxBytes int) (*Records, error) {
	return l.readBelow(from, limit, maxBytes, false)
}

// ReadUnflushed is ReadBelow over everything written, up to WrittenEnd,
// including batches SyncAlways has not fsynced yet. A leader sends them to
// its followers so that their fetch and fsync overlap its own fsync: the
// high watermark still counts only durable offsets on every replica, so
// nothing unflushed is ever acknowledged, and a follower that got batches
// the leader then lost truncates them by leader epoch like any divergence.
func (l *Log) ReadUnflushed(from, limit int64, maxBytes int) (*Records, error) {
	return l.readBelow(from, limit, maxBytes, true)
}

func (l *Log) readBelow(from, limit int64, maxBytes int, unflushed bool) (*Records, error) {
	for {
		gen := l.truncGen.Load()
		end, start := l.readableEnd.Load(), l.logStart.Load()
		if unflushed {
			end = l.writtenPub.Load()
		}
		if from < start || from > end {
			return nil, fmt.Errorf("%w: offset %d, log holds [%d, %d)", ErrOffsetOutOfRange, from, start, end)
		}
		limit := min(limit, end)
		if from >= limit {
			return &Records{FirstOffset: from, NextOffset: from}, nil
		}
		segs := *l.segs.Load()
		if len(segs) == 0 {
			return nil, ErrClosed
		}
		seg, _ := segmentFor(segs, from)
		if seg == nil {
			continue // removed under us: load the list again
		}
		m, err := seg.acquire()
		if errors.Is(err, errSegmentGone) {
			continue
		}
		if err != nil {
			return nil, err
		}
		bound := seg.readable.Load()
		if unflushed {
			bound = seg.written.Load()
		}
		recs, err := l.readSegment(seg, m, from, limit, maxBytes, bound)
		if err != nil || len(recs.Data) == 0 {
			m.release()
			if l.truncGen.Load() != gen {
				continue // truncated under us: what we saw may be gone
			}
			if err != nil {
				return nil, err
			}
		}
		return recs, nil
	}
}

// readSegment collects batches from the first readable bytes of seg
// through m; the caller holds m. Damage is reported as a *CorruptError
// when it is where the read starts; after a good prefix, the prefix is
// served and the next read, starting at the damage, reports it.
func (l *Log) readSegment(seg *segment, m *mapping, from, limit int64, maxBytes int, readable int64) (*Records, error) {
	pos, rel := seg.index.floor(uint32(from - seg.base))
	next := seg.base + int64(rel)
	// Find the batch holding from.
	for {
		if pos >= readable {
			if m.sealed && next < m.nextOffset {
				return nil, sealedEndError(seg, pos, next, m.nextOffset)
			}
			return &Records{FirstOffset: from, NextOffset: from}, nil
		}
		b, err := seg.readBatchAt(m, pos, readable, next)
		if err != nil {
			return nil, err
		}
		if b.NextOffset() > from {
			break
		}
		pos += int64(len(b))
		next = b.NextOffset()
	}
	start, first := pos, next
	for pos < readable {
		b, err := seg.readBatchAt(m, pos, readable, next)
		if err == nil && (b.NextOffset() > limit || (pos > start && pos-start+int64(len(b)) > int64(maxBytes))) {
			break
		}
		if err == nil && !l.cfg.SkipReadVerify {
			err = seg.checkBatch(b, pos)
		}
		if err != nil {
			if pos == start {
				return nil, err
			}
			break
		}
		pos += int64(len(b))
		next = b.NextOffset()
	}
	if pos == start {
		return &Records{FirstOffset: from, NextOffset: from}, nil
	}
	return &Records{Data: m.data[start:pos:pos], FirstOffset: first, NextOffset: next, m: m}, nil
}

// readBatchAt is batchAt for a reader, which in a sealed segment also
// checks that the batch ends by the next segment's base offset. Open trusts
// a sealed segment without reading it, so its first read is where a
// segment whose end does not meet the next one is found.
func (s *segment) readBatchAt(m *mapping, pos, end, offset int64) (record.Batch, error) {
	b, err := s.batchAt(m.data, pos, end, offset)
	if err == nil && m.sealed && b.NextOffset() > m.nextOffset {
		err = &CorruptError{Offset: offset, SegmentBase: s.base, Position: pos,
			Err: fmt.Errorf("batch ends at offset %d, past the next segment's base %d", b.NextOffset(), m.nextOffset)}
	}
	return b, err
}

// sealedEndError reports a sealed segment whose batches end at offset next,
// byte pos, short of the next segment's base.
func sealedEndError(seg *segment, pos, next, nextBase int64) error {
	return &CorruptError{Offset: next, SegmentBase: seg.base, Position: pos,
		Err: fmt.Errorf("sealed segment ends at offset %d but the next segment starts at %d", next, nextBase)}
}

// OffsetForTimestamp returns the base offset of the first batch whose commit
// timestamp is at least ts (Unix milliseconds). ok is false when every batch
// is older: a reader then starts at the end.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, ok bool, err error) {
	for {
		gen := l.truncGen.Load()
		offset, ok, err = l.offsetForTimestamp(ts)
		if err == nil || l.truncGen.Load() == gen {
			return offset, ok, err
		}
	}
}

func (l *Log) offsetForTimestamp(ts int64) (int64, bool, error) {
	segs := *l.segs.Load()
	for i, seg := range segs {
		if i < len(segs)-1 && seg.index.maxTime() < ts {
			continue // sealed and wholly older: no need to open it
		}
		if seg.readable.Load() == 0 {
			// Nothing to scan. Nor is there a file yet when Reset has
			// just published the segment.
			continue
		}
		m, err := seg.acquire()
		if errors.Is(err, errSegmentGone) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		off, found, err := scanForTimestamp(seg, m, ts)
		m.release()
		if err != nil || found {
			return off, found, err
		}
	}
	return 0, false, nil
}

func scanForTimestamp(seg *segment, m *mapping, ts int64) (int64, bool, error) {
	readable := seg.readable.Load()
	pos, rel := seg.index.timeFloor(ts)
	for next := seg.base + int64(rel); pos < readable; {
		b, err := seg.batchAt(m.data, pos, readable, next)
		if err != nil {
			return 0, false, err
		}
		if b.CommitTimestamp() >= ts {
			return b.BaseOffset(), true, nil
		}
		pos += int64(len(b))
		next = b.NextOffset()
	}
	return 0, false, nil
}
