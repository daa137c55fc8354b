package logstore

import (
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

	seg      *segment
	released atomic.Bool
}

// Release gives the view back. Data must not be used afterwards. Calling it
// more than once is harmless.
func (r *Records) Release() {
	if r.seg != nil && r.released.CompareAndSwap(false, true) {
		r.seg.release()
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
		seg, _ := segmentFor(*l.segs.Load(), from)
		if seg == nil || !seg.acquire() {
			continue // removed under us: load the list again
		}
		bound := seg.readable.Load()
		if unflushed {
			bound = seg.written.Load()
		}
		recs, err := l.readSegment(seg, from, limit, maxBytes, bound)
		if err != nil || len(recs.Data) == 0 {
			seg.release()
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

// readSegment collects batches from the first readable bytes of seg; the
// caller holds a reference. Damage is reported as a *CorruptError when it
// is where the read starts; after a good prefix, the prefix is served and
// the next read, starting at the damage, reports it.
func (l *Log) readSegment(seg *segment, from, limit int64, maxBytes int, readable int64) (*Records, error) {
	pos, rel := seg.index.floor(uint32(from - seg.base))
	next := seg.base + int64(rel)
	// Find the batch holding from.
	for {
		if pos >= readable {
			return &Records{FirstOffset: from, NextOffset: from}, nil
		}
		b, err := seg.batchAt(pos, readable, next)
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
		b, err := seg.batchAt(pos, readable, next)
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
	return &Records{Data: seg.data[start:pos:pos], FirstOffset: first, NextOffset: next, seg: seg}, nil
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
	for _, seg := range *l.segs.Load() {
		if !seg.acquire() {
			continue
		}
		off, found, err := scanForTimestamp(seg, ts)
		seg.release()
		if err != nil || found {
			return off, found, err
		}
	}
	return 0, false, nil
}

func scanForTimestamp(seg *segment, ts int64) (int64, bool, error) {
	readable := seg.readable.Load()
	pos, rel := seg.index.timeFloor(ts)
	for next := seg.base + int64(rel); pos < readable; {
		b, err := seg.batchAt(pos, readable, next)
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
