package logstore

import (
	"errors"
	"time"
)

// logTask is a kind of background work a log asks its scheduler for. A
// task is armed by the change that makes it necessary (a write, an fsync,
// a roll), never by the clock alone, so a log with nothing pending has no
// deadline at all.
type logTask int

const (
	// taskSync fsyncs under SyncInterval: armed by a write.
	taskSync logTask = iota
	// taskRoll rolls an active segment SegmentMaxAge after its first
	// batch: armed by that batch.
	taskRoll
	// taskRetentionSize applies retention once a write may have taken the
	// log over RetentionBytes.
	taskRetentionSize
	// taskRetentionAge applies retention when the oldest sealed segment
	// passes RetentionAge: armed at open, on roll and after retention.
	taskRetentionAge
	// taskCheckpoint writes the recovery point: armed when the durable
	// position moves.
	taskCheckpoint
	numTasks
)

// armWithin asks for task to run within d, unless it is already pending:
// for tasks whose delay is fixed, a pending deadline is never later.
func (l *Log) armWithin(task logTask, d time.Duration) {
	if l.job == nil {
		return // still recovering; Open arms what recovery leaves pending
	}
	l.tasksMu.Lock()
	if !l.taskDue[task].IsZero() {
		l.tasksMu.Unlock()
		return
	}
	at := l.sched.now().Add(d)
	l.taskDue[task] = at
	l.tasksMu.Unlock()
	l.job.wakeAt(at)
}

// armAt asks for task to run at at, unless it is pending earlier.
func (l *Log) armAt(task logTask, at time.Time) {
	if l.job == nil {
		return
	}
	l.tasksMu.Lock()
	if due := l.taskDue[task]; !due.IsZero() && !due.After(at) {
		l.tasksMu.Unlock()
		return
	}
	l.taskDue[task] = at
	l.tasksMu.Unlock()
	l.job.wakeAt(at)
}

// armOnOpenLocked arms what the recovered log has pending. Holds mu.
func (l *Log) armOnOpenLocked() {
	if l.cfg.SegmentMaxAge > 0 && l.active.size > 0 {
		l.armWithin(taskRoll, l.cfg.SegmentMaxAge)
	}
	if l.cfg.RetentionBytes > 0 && len(*l.segs.Load()) > 1 {
		l.armWithin(taskRetentionSize, l.cfg.RetentionCheckInterval)
	}
	l.armRetentionAgeLocked()
}

// armRetentionAgeLocked arms retention for when the oldest sealed segment
// passes an age limit (RetentionAge, or LocalRetentionAge once it is
// remote), or when the local count rule already lets it go; a segment
// already due is looked at again RetentionCheckInterval from now, so a
// retention that failed is not retried in a loop. Holds mu.
func (l *Log) armRetentionAgeLocked() {
	l.armRetentionLocked(l.cfg.RetentionCheckInterval, nowMillis(l.cfg.Now))
}

// armRetentionAfterRollLocked is armRetentionAgeLocked after a roll: the
// local count rule, which the new sealed segment may have tipped over,
// runs at once (a follower catching up rolls past the remote end it
// learned earlier and keeps only what the rule keeps). Holds mu.
func (l *Log) armRetentionAfterRollLocked() { l.armRetentionLocked(0, nowMillis(l.cfg.Now)) }

// armRetentionLocked arms retention for the oldest sealed segment, whose
// expiry it measures against nowMs: a retention pass's own clock reading
// after a pass (EnforceRetention), so a segment that expired while the
// pass ran is looked at again at once, not taken for one due that the
// pass kept (which waits RetentionCheckInterval).
func (l *Log) armRetentionLocked(countDelay time.Duration, nowMs int64) {
	segs := *l.segs.Load()
	if len(segs) < 2 {
		return
	}
	oldest := segs[0]
	remote := oldest.nextOffset <= l.bounds.RemoteEnd
	if remote && l.cfg.LocalRetentionSegments > 0 && len(segs)-2 >= l.cfg.LocalRetentionSegments {
		l.armAt(taskRetentionAge, l.sched.now().Add(countDelay))
		return
	}
	age := l.cfg.RetentionAge
	if oldest.nextOffset > l.bounds.ExpireBelow {
		age = 0
	}
	if remote && l.cfg.LocalRetentionAge > 0 && (age <= 0 || l.cfg.LocalRetentionAge < age) {
		age = l.cfg.LocalRetentionAge
	}
	if age <= 0 {
		return
	}
	expiresMs := oldest.index.maxTime() + age.Milliseconds()
	left := time.Duration(expiresMs-nowMs) * time.Millisecond
	if left < 0 {
		// Due already and still here (a deletion failed): not retried in
		// a loop.
		left = l.cfg.RetentionCheckInterval
	} else {
		// It expires once the clock passes expiresMs (retention's rule is
		// strict): a millisecond after. Waiting at least the check
		// interval kept a segment that expired a moment later, after
		// log.ttl was lowered to a second just after its last write, for
		// 30 s.
		left += time.Millisecond
	}
	l.armAt(taskRetentionAge, l.sched.now().Add(left))
}

// runTasks is the log's scheduler job: it runs what is due at now and asks
// to be woken for what is pending later. A failed log does no background
// work (its failure was logged once; only reopening helps).
func (l *Log) runTasks(now time.Time) {
	var due [numTasks]bool
	l.tasksMu.Lock()
	for t, at := range l.taskDue {
		if !at.IsZero() && !at.After(now) {
			due[t], l.taskDue[t] = true, time.Time{}
		}
	}
	l.tasksMu.Unlock()

	if l.Failed() == nil {
		if due[taskSync] {
			l.logTaskError("interval fsync failed", l.Sync())
		}
		if due[taskRoll] {
			l.logTaskError("roll by age failed", l.rollIfOld())
		}
		if due[taskRetentionSize] || due[taskRetentionAge] {
			_, err := l.EnforceRetention()
			l.logTaskError("retention failed", err)
		}
		if due[taskCheckpoint] {
			l.logTaskError("recovery point checkpoint failed", l.checkpointRecoveryPoint(false))
		}
	}

	var next time.Time
	l.tasksMu.Lock()
	for _, at := range l.taskDue {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	l.tasksMu.Unlock()
	if !next.IsZero() {
		l.job.wakeAt(next)
	}
}

// logTaskError logs a background task's failure; a log closing under the
// task is no failure.
func (l *Log) logTaskError(msg string, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		l.logger.Error(msg, "err", err)
	}
}

// rollIfOld rolls the active segment once its first batch is SegmentMaxAge
// old; a younger one asks again for when it will be.
func (l *Log) rollIfOld() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	s := l.active
	if s.size == 0 || s.firstAppend == 0 {
		return nil // its first batch arms the roll
	}
	left := time.Duration(s.firstAppend+l.cfg.SegmentMaxAge.Milliseconds()-nowMillis(l.cfg.Now)) * time.Millisecond
	if left > 0 {
		l.armWithin(taskRoll, left)
		return nil
	}
	return l.rollLocked()
}
