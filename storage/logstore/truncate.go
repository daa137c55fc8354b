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

	// From here on waiting appenders fail and in-flight fsyncs do not publish.
	l.truncGen.Add(1)
	newPos := logPosition{segmentBase: target.base, pos: cut, offset: newEnd}
	l.syncMu.Lock()
	if l.durable.offset > newEnd {
		l.durable = newPos
	}
	l.syncCond.Broadcast()
	l.syncMu.Unlock()
	// The mark goes down on disk before anything is cut: whenever power
	// fails, the disk then holds a mark at or below what is left (see
	// durableMarkFile).
	if err := l.lowerDurableMark(newEnd); err != nil {
		return err
	}
	if l.readableEnd.Load() > newEnd {
		l.readableEnd.Store(newEnd)
	}
	if l.writtenPub.Load() > newEnd {
		l.writtenPub.Store(newEnd)
	}
	if target.readable.Load() > cut {
		target.readable.Store(cut)
	}
	if target.written.Load() > cut {
		target.written.Store(cut)
	}
	// Lower the recovery point first, so a crash part-way never trusts what
	// is being removed.
	l.cpMu.Lock()
	if l.checkpointed.offset > newEnd || l.checkpointed.segmentBase > target.base {
		err = l.writeRecoveryPointLocked(newPos)
	}
	l.cpMu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		return err
	}

	// Later segments go newest first, so a crash leaves a prefix.
	kept := append([]*segment(nil), segs[:idx+1]...)
	l.publishSegments(kept)
	for i := len(segs) - 1; i > idx; i-- {
		if err := segs[i].remove(); err != nil {
			return l.fail(err)
		}
	}
	// A sealed target becomes active again: its next opening is writable
	// and covers the full segment size.
	if target.sealed {
		target.removeIndexes()
		target.setSealed(false, l.cfg.SegmentMaxBytes)
	}
	if err := target.zeroFrom(cut); err != nil {
		return l.fail(err)
	}
	if err := l.syncSegmentLocked(target, false); err != nil {
		return err
	}
	target.index.truncate(cut)
	target.nextOffset = newEnd
	l.active = target
	l.writtenEnd = newEnd
	if newEnd == target.base {
		target.firstAppend = 0
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
