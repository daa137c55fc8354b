package logstore

import (
	"os"

	"github.com/floedb/floe/internal/pkgerr"
)

// Reset empties the log and starts it again, empty, at offset, which must
// be at or past its end: a follower whose leader no longer holds the
// follower's end (retention moved the leader's start past it) starts over
// where the cluster's data still is, and one whose batches below its
// leader's start the remote log holds drops them, starting over at its
// end (replication.UnjudgedBelowStart). Every segment and epoch goes; appends waiting
// for their fsync fail with ErrTruncated; readers holding views keep
// their bytes.
//
// Readers racing a reset see the old log or the new one, never a segment
// whose file is gone: the new, empty log is published first (nothing in
// it is readable, so no reader opens its file before it exists), then the
// old segments are closed, so a reader that picked one before reloads the
// list instead of opening a renamed file (errSegmentGone), and only then
// are their files renamed away.
//
// Crash safety: the durable mark is lowered durably first (a crash that
// leaves no segment at all must not read as a lost tail), then the old
// segments are renamed away oldest first (a crash leaves a suffix of them:
// a valid log, as after retention), then the new segment is created and
// the recovery point moved to it, then the renamed files are removed
// (recovery removes any left).
func (l *Log) Reset(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset < l.writtenEnd {
		return pkgerr.Errorf("logstore", "reset to %d, below the end %d (use Truncate)", offset, l.writtenEnd)
	}
	old := *l.segs.Load()
	next := newSegment(l, offset) // its file is created below
	l.truncGen.Add(1)
	l.readableEnd.Store(offset)
	l.writtenPub.Store(offset)
	l.publishSegments([]*segment{next})
	for _, s := range old {
		s.close()
	}
	if err := l.lowerDurableMark(0); err != nil {
		return err
	}
	for _, s := range old {
		if err := os.Rename(s.path(logSuffix), s.path(logSuffix+deletedSuffix)); err != nil {
			return l.fail(pkgerr.Errorf("logstore", "reset: %w", err))
		}
		s.removeIndexes()
	}
	if l.hooks.resetRenamed != nil {
		l.hooks.resetRenamed()
	}
	if err := syncDir(l.cfg.Dir); err != nil {
		return l.fail(err)
	}
	if err := next.create(); err != nil {
		return l.fail(err)
	}
	if err := syncDir(l.cfg.Dir); err != nil {
		return l.fail(err)
	}
	pos := logPosition{segmentBase: offset, pos: 0, offset: offset}
	l.syncMu.Lock()
	l.durable = pos
	markErr := l.mark.set(offset)
	l.syncCond.Broadcast()
	l.syncMu.Unlock()
	if markErr != nil {
		return l.fail(markErr)
	}
	l.cpMu.Lock()
	err := l.writeRecoveryPointLocked(pos)
	l.cpMu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	if err := l.epochs.truncateFromEnd(0); err != nil {
		return l.fail(err)
	}
	l.active, l.writtenEnd = next, offset
	for _, s := range old {
		_ = os.Remove(s.path(logSuffix + deletedSuffix))
	}
	l.logger.Info("reset log", "start_offset", offset)
	return nil
}
