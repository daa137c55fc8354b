package logstore

import "fmt"

// Truncate removes every batch at or after offset to, as a follower does when
// its log diverged from the leader's. to should be a batch boundary (the
// epoch cache yields one); otherwise the whole batch holding to goes too.
// The epoch cache is truncated with the log: truncating exactly at the end
// removes only epochs that start there; past the end does nothing; below
// the start offset is ErrOffsetOutOfRange.
//
// Appends still waiting for their fsync when a truncation happens fail with
// ErrTruncated. Readers holding views keep valid memory, but the bytes they
// see past the new end may read as zeros.
func (l *Log) Truncate(to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if to >= l.writtenEnd {
		if to == l.writtenEnd {
			// No batch goes, but an epoch assigned at the end without a
			// batch of its own (a leader that appended nothing) does.
			return l.epochs.truncateFromEnd(to)
		}
		return nil
	}
	if start := l.logStart.Load(); to < start {
		return fmt.Errorf("%w: truncate to %d below the log start %d", ErrOffsetOutOfRange, to, start)
	}
	segs := *l.segs.Load()
	target, idx := segmentFor(segs, to)
	cut, newEnd, err := batchBoundary(target, to)
	if err != nil {
		return err
	}
	if newEnd > to || cut > target.size {
		panic(fmt.Sprintf("logstore: truncation to %d would keep up to %d (byte %d of %d)", to, newEnd, cut, target.size))
	}

	newPos := logPosition{segmentBase: target.base, pos: cut, offset: newEnd}
	if err := l.lowerMarksLocked(target, newPos); err != nil {
		return err
	}
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		return err
	}
	if err := l.cutSegmentsLocked(segs, idx, newPos); err != nil {
		return err
	}
	l.logger.Info("truncated log", "to_offset", to, "end_offset", newEnd, "segment", target.base)
	return nil
}

// batchBoundary finds the byte position and base offset of the batch that
// holds offset to in seg (or the segment end when to is past its batches).
// It reads no header at or past to, so a log can be truncated right at a
// damaged batch (the offset a *CorruptError names) to drop it and what
// follows.
func batchBoundary(seg *segment, to int64) (pos, offset int64, err error) {
	m, err := seg.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer m.release()
	pos, rel := seg.index.floor(uint32(to - seg.base))
	next := seg.base + int64(rel)
	for pos < seg.size {
		if next >= to {
			return pos, next, nil
		}
		b, err := seg.batchAt(m.data, pos, seg.size, next)
		if err != nil {
			return 0, 0, err
		}
		if b.NextOffset() > to {
			return pos, next, nil
		}
		pos += int64(len(b))
		next = b.NextOffset()
	}
	// The end of the segment's batches: its next offset, or short of it in
	// a sealed segment found damaged there (sealedEndError).
	return seg.size, next, nil
}

// lowerMarksLocked takes every mark of the log down to to, before anything
// is cut: the published ends, the target segment's, the durable mark (on
// disk first, so whenever power fails the disk holds a mark at or below
// what is left; see durableMarkFile) and the recovery point (so a crash
// part-way never trusts what is being removed). From its first step on,
// waiting appenders fail and in-flight fsyncs do not publish.
func (l *Log) lowerMarksLocked(target *segment, to logPosition) error {
	l.truncGen.Add(1)
	l.syncMu.Lock()
	if l.durable.offset > to.offset {
		l.durable = to
	}
	l.syncCond.Broadcast()
	l.syncMu.Unlock()
	if err := l.lowerDurableMark(to.offset); err != nil {
		return err
	}
	if l.readableEnd.Load() > to.offset {
		l.readableEnd.Store(to.offset)
	}
	if l.writtenPub.Load() > to.offset {
		l.writtenPub.Store(to.offset)
	}
	if target.readable.Load() > to.pos {
		target.readable.Store(to.pos)
	}
	if target.written.Load() > to.pos {
		target.written.Store(to.pos)
	}
	var err error
	l.cpMu.Lock()
	if l.checkpointed.offset > to.offset || l.checkpointed.segmentBase > target.base {
		err = l.writeRecoveryPointLocked(to)
	}
	l.cpMu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// cutSegmentsLocked removes the segments after segs[idx], newest first so
// a crash leaves a prefix, and cuts segs[idx] at to: its bytes past to are
// zeroed and synced, and it becomes the active segment (a sealed one is
// writable again and covers the full segment size).
func (l *Log) cutSegmentsLocked(segs []*segment, idx int, to logPosition) error {
	target := segs[idx]
	l.publishSegments(append([]*segment(nil), segs[:idx+1]...))
	for i := len(segs) - 1; i > idx; i-- {
		if err := segs[i].remove(); err != nil {
			return l.fail(err)
		}
	}
	if target.sealed {
		target.removeIndexes()
		target.setSealed(false, l.cfg.SegmentMaxBytes)
	}
	if err := target.zeroFrom(to.pos); err != nil {
		return l.fail(err)
	}
	if err := l.syncSegmentLocked(target, false); err != nil {
		return err
	}
	target.index.truncate(to.pos)
	target.nextOffset = to.offset
	l.active = target
	l.writtenEnd = to.offset
	if to.offset == target.base {
		target.firstAppend = 0
	}
	return nil
}
