package logstore

import (
	"fmt"
	"time"
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
	seg.acquire() // the active segment always holds the log's reference
	pos := logPosition{segmentBase: seg.base, pos: seg.size, offset: l.writtenEnd}
	gen := l.truncGen.Load()
	l.mu.Unlock()
	defer seg.release()

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
// readers may see. Holds mu.
func (l *Log) publishDurableLocked(seg *segment, pos logPosition, gen int64) {
	if l.truncGen.Load() != gen {
		return
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.failure != nil {
		return
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
	}
}

// Sync fsyncs everything written so far, whatever the policy.
func (l *Log) Sync() error {
	l.mu.Lock()
	end, gen := l.writtenEnd, l.truncGen.Load()
	l.mu.Unlock()
	return l.waitDurable(end, gen)
}

// background fsyncs under SyncInterval, checkpoints the recovery point and
// applies retention, until Close.
func (l *Log) background() {
	defer l.wg.Done()
	tick := l.cfg.RecoveryPointInterval
	if l.cfg.Sync == SyncInterval {
		tick = min(tick, l.cfg.SyncInterval)
	}
	if l.cfg.RetentionBytes > 0 || l.cfg.RetentionAge > 0 {
		tick = min(tick, l.cfg.RetentionCheckInterval)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	lastSync := l.cfg.Now()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		now := l.cfg.Now()
		if l.Failed() != nil {
			continue // logged once when it failed; only reopening helps
		}
		if l.cfg.Sync == SyncInterval && now.Sub(lastSync) >= l.cfg.SyncInterval {
			lastSync = now
			if err := l.Sync(); err != nil {
				l.logger.Error("interval fsync failed", "err", err)
			}
		}
		if err := l.writeRecoveryPoint(); err != nil {
			l.logger.Error("recovery point checkpoint failed", "err", err)
		}
		if (l.cfg.RetentionBytes > 0 || l.cfg.RetentionAge > 0) && now.Sub(l.lastRetention) >= l.cfg.RetentionCheckInterval {
			l.lastRetention = now
			if _, err := l.EnforceRetention(); err != nil {
				l.logger.Error("retention failed", "err", err)
			}
		}
	}
}
