package logstore

import (
	"fmt"

	"github.com/floedb/floe/storage/record"
)

// Append appends one batch as the leader at epoch: it stamps the batch's base
// offset, leader epoch and commit timestamp (in place, outside the CRC),
// writes it, and under SyncAlways returns once it is fsynced.
//
// The batch must pass record.Check; batches over MaxBatchBytes are refused.
// An epoch newer than the epoch cache's latest is assigned at this batch; an
// older one is refused with ErrStaleEpoch.
func (l *Log) Append(b record.Batch, epoch int32) (AppendInfo, error) {
	info, wait, err := l.AppendPending(b, epoch)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := wait(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// AppendPending is Append without waiting for durability: it returns once
// the batch is written, with a wait function that returns once the batch is
// durable (at once unless SyncAlways). Callers that must order appends (an
// idempotence check and the append it decides) hold their own lock across
// AppendPending and release it before wait, so their appends still share
// fsyncs.
func (l *Log) AppendPending(b record.Batch, epoch int32) (AppendInfo, func() error, error) {
	noWait := func() error { return nil }
	if len(b) > l.cfg.MaxBatchBytes {
		return AppendInfo{}, nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(b), l.cfg.MaxBatchBytes)
	}
	checked, err := record.Check(b)
	if err != nil {
		return AppendInfo{}, nil, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	if len(checked) != len(b) {
		return AppendInfo{}, nil, fmt.Errorf("%w: %d bytes after the batch", ErrInvalidBatch, len(b)-len(checked))
	}

	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, nil, err
	}
	if err := l.epochs.assign(epoch, l.writtenEnd); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, nil, err
	}
	ts := max(nowMillis(l.cfg.Now), l.lastTimestamp)
	b.SetBaseOffset(l.writtenEnd)
	b.SetLeaderEpoch(epoch)
	b.SetCommitTimestamp(ts)
	if err := l.writeBatchesLocked(b, 1); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, nil, err
	}
	info := AppendInfo{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset(), Timestamp: ts}
	gen := l.truncGen.Load()
	l.mu.Unlock()

	if l.cfg.Sync != SyncAlways {
		return info, noWait, nil
	}
	return info, func() error { return l.waitDurable(info.LastOffset+1, gen) }, nil
}

// AppendReplicated appends batches fetched from the leader, unchanged: they
// keep their offsets, epochs and timestamps. data holds whole batches, the
// first starting at the log end and each following the previous. Under
// SyncAlways it returns once they are fsynced.
func (l *Log) AppendReplicated(data []byte) (AppendInfo, error) {
	info, wait, err := l.AppendReplicatedPending(data)
	if err != nil {
		return AppendInfo{}, err
	}
	if err := wait(); err != nil {
		return AppendInfo{}, err
	}
	return info, nil
}

// AppendReplicatedPending is AppendReplicated returning once the batches
// are written, with the function that waits until they are durable (under
// SyncAlways; at once otherwise). A follower that writes the batches of
// many buckets first and then waits for all of them at once has their
// fsyncs run side by side instead of one after another.
func (l *Log) AppendReplicatedPending(data []byte) (AppendInfo, func() error, error) {
	info, gen, err := l.writeReplicated(data)
	if err != nil {
		return AppendInfo{}, nil, err
	}
	if l.cfg.Sync != SyncAlways {
		return info, func() error { return nil }, nil
	}
	return info, func() error { return l.waitDurable(info.LastOffset+1, gen) }, nil
}

// writeReplicated checks and writes replicated batches and returns the
// truncation generation they were written in.
func (l *Log) writeReplicated(data []byte) (AppendInfo, int64, error) {
	var info AppendInfo
	it := record.NewBatchIterator(data, true)
	count := 0
	var prevNext int64 = -1
	var prevEpoch int32 = -1
	for it.Next() {
		b := it.Batch()
		if len(b) > l.cfg.MaxBatchBytes {
			return info, 0, fmt.Errorf("%w: %d bytes at offset %d, limit %d", ErrBatchTooLarge, len(b), b.BaseOffset(), l.cfg.MaxBatchBytes)
		}
		if prevNext >= 0 && b.BaseOffset() != prevNext {
			return info, 0, fmt.Errorf("%w: batch at %d follows one ending at %d", ErrNonContiguous, b.BaseOffset(), prevNext)
		}
		if b.LeaderEpoch() < prevEpoch {
			return info, 0, fmt.Errorf("%w: batch at %d has epoch %d after epoch %d", ErrInvalidBatch, b.BaseOffset(), b.LeaderEpoch(), prevEpoch)
		}
		if count == 0 {
			info.BaseOffset = b.BaseOffset()
		}
		info.LastOffset, info.Timestamp = b.LastOffset(), b.CommitTimestamp()
		prevNext, prevEpoch = b.NextOffset(), b.LeaderEpoch()
		count++
	}
	if err := it.Err(); err != nil {
		return AppendInfo{}, 0, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}
	if count == 0 {
		return AppendInfo{}, 0, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}

	l.mu.Lock()
	if err := l.writableLocked(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, 0, err
	}
	if info.BaseOffset != l.writtenEnd {
		l.mu.Unlock()
		return AppendInfo{}, 0, fmt.Errorf("%w: first batch at %d, log ends at %d", ErrNonContiguous, info.BaseOffset, l.writtenEnd)
	}
	if last, ok := l.epochs.latest(); ok && record.Batch(data).LeaderEpoch() < last.Epoch {
		l.mu.Unlock()
		return AppendInfo{}, 0, fmt.Errorf("%w: replicated batch of epoch %d, the log is at %d", ErrStaleEpoch,
			record.Batch(data).LeaderEpoch(), last.Epoch)
	}
	// Epochs were checked to rise from at least the latest one, so assigning
	// them inside the write loop cannot be refused.
	if err := l.writeBatchesLocked(data, count); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, 0, err
	}
	gen := l.truncGen.Load()
	l.mu.Unlock()
	return info, gen, nil
}

func (l *Log) writableLocked() error {
	if l.closed {
		return ErrClosed
	}
	return l.Failed()
}

// writeBatchesLocked writes count valid, contiguous batches starting at the
// log end, rolling segments as needed, assigning new epochs and indexing.
// Consecutive batches bound for one segment go out in one write.
func (l *Log) writeBatchesLocked(data []byte, count int) error {
	runStart, runEnd := 0, 0
	flush := func() error {
		if runEnd == runStart {
			return nil
		}
		m, err := l.active.acquireForWrite()
		if err != nil {
			return err
		}
		defer m.release()
		if err := l.active.write(m, data[runStart:runEnd]); err != nil {
			return err
		}
		runStart = runEnd
		return nil
	}
	seg := l.active
	for range count {
		b := record.Batch(data[runEnd:])
		b = b[:b.Size()]
		if l.shouldRoll(int64(runEnd-runStart), int64(len(b))) || b.LastOffset()-l.active.base > maxRelativeOffset {
			if err := flush(); err != nil {
				return l.fail(err)
			}
			if err := l.rollLocked(); err != nil {
				return err
			}
			seg = l.active
		}
		if err := l.epochs.assign(b.LeaderEpoch(), b.BaseOffset()); err != nil {
			return err
		}
		if seg.size+int64(runEnd-runStart) == 0 {
			seg.firstAppend = nowMillis(l.cfg.Now)
			if l.cfg.SegmentMaxAge > 0 {
				l.armWithin(taskRoll, l.cfg.SegmentMaxAge)
			}
		}
		seg.index.observe(seg.base, b, seg.size+int64(runEnd-runStart))
		seg.nextOffset = b.NextOffset()
		l.writtenEnd = b.NextOffset()
		l.lastTimestamp = max(l.lastTimestamp, b.CommitTimestamp())
		runEnd += len(b)
	}
	if err := flush(); err != nil {
		// The batches are indexed but not written: the log is inconsistent
		// in memory. Refuse further writes; reopening recovers.
		return l.fail(err)
	}
	seg.written.Store(seg.size)
	l.writtenPub.Store(l.writtenEnd)
	if l.cfg.Sync != SyncAlways {
		seg.readable.Store(seg.size)
		l.readableEnd.Store(l.writtenEnd)
	}
	if l.cfg.Sync == SyncInterval {
		l.armWithin(taskSync, l.cfg.SyncInterval)
	}
	if l.cfg.RetentionBytes > 0 && len(*l.segs.Load()) > 1 {
		l.armWithin(taskRetentionSize, l.cfg.RetentionCheckInterval)
	}
	return nil
}

// maxRelativeOffset keeps offsets relative to a segment's base in 32 bits.
const maxRelativeOffset = 1<<32 - 1

// shouldRoll reports whether the active segment must be sealed before a
// batch of batchBytes is written to it, after runBytes that are bound for it
// but not written yet (one write covers a run of batches, so the segment's
// size alone undercounts it). An empty segment takes any batch.
func (l *Log) shouldRoll(runBytes, batchBytes int64) bool {
	s := l.active
	used := s.size + runBytes
	if used == 0 {
		return false
	}
	if used+batchBytes > l.cfg.SegmentMaxBytes {
		return true
	}
	age := l.cfg.SegmentMaxAge
	return age > 0 && s.firstAppend > 0 && nowMillis(l.cfg.Now)-s.firstAppend >= age.Milliseconds()
}

// rollLocked seals the active segment and starts a new one at the log end.
// Order matters for crash safety: the old segment is durable, trimmed and
// indexed before the new file exists.
func (l *Log) rollLocked() error {
	old := l.active
	if err := l.syncSegmentLocked(old, false); err != nil {
		return err
	}
	if err := old.trim(); err != nil {
		return l.fail(err)
	}
	if err := l.syncSegmentLocked(old, true); err != nil {
		return err
	}
	if err := old.writeIndexes(); err != nil {
		return err
	}
	// Its full-size writable mapping goes (its readers keep it until they
	// release); the next read maps the sealed file as it is.
	old.setSealed(true, 0)
	old.readable.Store(old.size)
	old.written.Store(old.size)
	l.readableEnd.Store(l.writtenEnd)
	l.writtenPub.Store(l.writtenEnd)
	l.publishDurableLocked(old, logPosition{segmentBase: old.base, pos: old.size, offset: l.writtenEnd}, l.truncGen.Load())
	if err := l.writeRecoveryPoint(); err != nil {
		return err
	}

	next, err := createSegment(l, l.writtenEnd)
	if err != nil {
		return err
	}
	if err := syncDir(l.cfg.Dir); err != nil {
		return err
	}
	l.publishSegments(append(append([]*segment(nil), *l.segs.Load()...), next))
	l.active = next
	l.armRetentionAfterRollLocked()
	l.logger.Debug("rolled segment", "sealed_base_offset", old.base, "bytes", old.size, "base_offset", next.base)
	return nil
}
