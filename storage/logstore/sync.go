package logstore

import (
	"fmt"
	"runtime"
)

// waitDurable blocks until everything below end is fsynced. The first waiter
// to find no fsync running becomes the syncer; the others wait for it, and
// whatever was written meanwhile is covered by the next fsync (group commit).
// gen is the truncation generation the append saw: if the log was truncated
// since, the append may be gone, and the caller learns ErrTruncated. Once
// the log failed, every waiter not already durable gets the failure.
func (l *Log) waitDurable(end, gen int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for {
		if l.truncGen.Load() != gen {
			return fmt.Errorf("%w: offsets below %d", ErrTruncated, end)
		}
		if l.durable.offset >= end {
			return nil
		}
		if l.failure != nil {
			return l.failure
		}
		if l.stopped {
			return ErrClosed
		}
		if l.syncing {
			l.syncCond.Wait()
			continue
		}
		l.syncing = true
		l.syncMu.Unlock()
		// Appends that arrived with this one (requests read from the same
		// socket buffer, writers woken by the same acks) are runnable
		// now: let them write first, so this fsync covers them too. With
		// nothing else to run this returns at once.
		runtime.Gosched()
		err := l.syncOnce()
		l.syncMu.Lock()
		l.syncing = false
		l.syncCond.Broadcast()
		if err != nil {
			return err
		}
	}
}

// syncOnce fsyncs the active segment up to what is written now and
// publishes the result to readers and waiters.
func (l *Log) syncOnce() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	seg := l.active
	pos := logPosition{segmentBase: seg.base, pos: seg.size, offset: l.writtenEnd}
	gen := l.truncGen.Load()
	l.mu.Unlock()

	if err := l.syncSegment(seg, false); err != nil {
		return err
	}

	l.mu.Lock()
	l.publishDurableLocked(seg, pos, gen)
	l.mu.Unlock()
	return nil
}

// publishDurableLocked records that pos is durable, unless a truncation
// happened since it was captured or the log failed meanwhile (a failed log's
// durable position never moves again). Under SyncAlways that is also what
// readers may see. A segment the fsync covered whole is clean again, and a
// durable position that moved asks for a checkpoint. Holds mu.
func (l *Log) publishDurableLocked(seg *segment, pos logPosition, gen int64) {
	if l.truncGen.Load() != gen {
		return
	}
	if l.publishDurable(seg, pos) {
		l.armWithin(taskCheckpoint, l.cfg.RecoveryPointInterval)
	}
	if pos.segmentBase == seg.base && pos.pos == seg.size {
		seg.markClean()
	}
}

// publishDurable is publishDurableLocked under syncMu; it reports whether
// the durable position moved.
func (l *Log) publishDurable(seg *segment, pos logPosition) bool {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.failure != nil {
		return false
	}
	if l.cfg.Sync == SyncAlways {
		if seg.readable.Load() < pos.pos {
			seg.readable.Store(pos.pos)
		}
		if l.readableEnd.Load() < pos.offset {
			l.readableEnd.Store(pos.offset)
		}
	}
	if pos.offset > l.durable.offset || pos.segmentBase > l.durable.segmentBase {
		l.durable = pos
		if err := l.mark.set(pos.offset); err != nil {
			l.logger.Warn("durable mark not written", "err", err) // only weakens what the next Open can tell
		}
		return true
	}
	return false
}

// Sync fsyncs everything written so far, whatever the policy.
func (l *Log) Sync() error {
	l.mu.Lock()
	end, gen := l.writtenEnd, l.truncGen.Load()
	l.mu.Unlock()
	return l.waitDurable(end, gen)
}
