package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/floedb/floe/internal/pkgerr"
)

// syncFailedFile marks a log that failed: it holds the last durable position
// (recovery-point layout), and the next Open cuts the log back to it.
const syncFailedFile = "sync-failed"

// Failed returns the error that failed the log for good (it wraps
// ErrSyncFailed and the cause), or nil while the log is healthy. A failed
// log refuses every append, sync, truncation and epoch assignment; only
// reopening recovers it, to its last durable position.
func (l *Log) Failed() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.failure
}

// syncSegment fsyncs seg. A failure fails the log: after a failed fsync the
// kernel may have dropped the dirty pages and marked them clean, so a later
// fsync would succeed without writing them, and nothing written since the
// last durable position can ever be called durable again. fsyncMu makes the
// check and the fsync one step, so no fsync starts between a failed one and
// the failure being recorded.
func (l *Log) syncSegment(seg *segment, full bool) error {
	l.fsyncMu.Lock()
	defer l.fsyncMu.Unlock()
	if err := l.Failed(); err != nil {
		return err
	}
	// A token of the node's scheduler bounds the fsyncs running at once.
	l.sched.syncs <- struct{}{}
	var err error
	if l.cfg.FsyncFault != nil {
		err = l.cfg.FsyncFault(seg.base)
	}
	if err == nil {
		err = seg.fsync(full)
	}
	<-l.sched.syncs
	if err != nil {
		return l.fail(fmt.Errorf("%w: segment %d: %w", ErrSyncFailed, seg.base, err))
	}
	return nil
}

// syncSegmentLocked is syncSegment for a caller holding mu: no write can
// come between the fsync and the segment being marked clean.
func (l *Log) syncSegmentLocked(seg *segment, full bool) error {
	if err := l.syncSegment(seg, full); err != nil {
		return err
	}
	seg.markClean()
	return nil
}

// fail makes the log refuse writes after an I/O error it cannot undo, wakes
// every waiter with the error, and leaves a sync-failed marker holding the
// last durable position so that reopening recovers to it instead of trusting
// whatever the page cache still shows. The marker is best effort: the disk
// may refuse it too, and then the recovery point (which never moves after a
// failure) bounds what reopening trusts below it. It returns the log's
// failure, the first one recorded.
func (l *Log) fail(err error) error {
	if !errors.Is(err, ErrSyncFailed) {
		err = fmt.Errorf("%w: %w", ErrSyncFailed, err)
	}
	l.syncMu.Lock()
	first := l.failure == nil
	if first {
		l.failure = err
	}
	durable := l.durable
	failure := l.failure
	l.syncCond.Broadcast()
	l.syncMu.Unlock()
	if !first || !l.opened {
		// Open reports a failure during recovery itself, and the durable
		// position is not known yet: a marker would point nowhere.
		return failure
	}
	l.logger.Error("log failed; it refuses writes until reopened, which recovers its last durable offset",
		"durable_offset", durable.offset, "err", err)
	if werr := writeCheckpoint(l.cfg.Dir, syncFailedFile, encodePosition(durable)); werr != nil {
		l.logger.Error("writing the sync-failed marker failed", "err", werr)
	}
	return failure
}

// readSyncFailed returns the position the sync-failed marker holds and
// whether there is one. A marker that exists but cannot be read still says
// the log failed: the caller falls back on the recovery point.
func (l *Log) readSyncFailed() (pos logPosition, marked bool, err error) {
	buf, err := readCheckpoint(l.cfg.Dir, syncFailedFile)
	if errors.Is(err, os.ErrNotExist) {
		return logPosition{}, false, nil
	}
	if err != nil {
		return logPosition{}, true, err
	}
	pos, err = decodePosition(syncFailedFile, buf)
	return pos, true, err
}

// recoverSyncFailed cuts a log that failed back to the durable position
// its marker holds (or to the recovery point), then removes the marker. Bytes
// past it may still sit in the page cache with valid checksums while the
// disk never got them: they must not be served, and the next crash would
// lose them anyway.
func (l *Log) recoverSyncFailed(rp logPosition, rpErr error) error {
	pos, marked, err := l.readSyncFailed()
	if !marked {
		return nil
	}
	if err != nil {
		if rpErr != nil {
			return fmt.Errorf("%w: the log failed before, and neither %s (%v) nor %s (%v) says where it was durable",
				ErrCorrupt, syncFailedFile, err, recoveryPointFile, rpErr)
		}
		l.logger.Warn("sync-failed marker unreadable; recovering to the recovery point", "err", err)
		pos = rp
	}
	if pos.offset < l.writtenEnd {
		l.logger.Warn("the log failed before: cutting it back to its last durable offset",
			"durable_offset", pos.offset, "end_offset", l.writtenEnd)
		// Truncate forgets the epochs it cuts; recovery keeps the newest.
		newest, ok := l.epochs.latest()
		if err := l.Truncate(pos.offset); err != nil {
			return err
		}
		if ok {
			if err := l.epochs.assign(newest.Epoch, l.writtenEnd); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(filepath.Join(l.cfg.Dir, syncFailedFile)); err != nil {
		return pkgerr.Errorf("logstore", "%w", err)
	}
	return syncDir(l.cfg.Dir)
}

// encodePosition lays out a position as the recovery point and the
// sync-failed marker store it: segment base, byte position, offset (u64 each).
func encodePosition(pos logPosition) []byte {
	buf := make([]byte, 24)
	binary.BigEndian.PutUint64(buf, uint64(pos.segmentBase))
	binary.BigEndian.PutUint64(buf[8:], uint64(pos.pos))
	binary.BigEndian.PutUint64(buf[16:], uint64(pos.offset))
	return buf
}

func decodePosition(name string, buf []byte) (logPosition, error) {
	if len(buf) != 24 {
		return logPosition{}, fmt.Errorf("%w: %s: %d bytes", ErrCorrupt, name, len(buf))
	}
	return logPosition{
		segmentBase: int64(binary.BigEndian.Uint64(buf)),
		pos:         int64(binary.BigEndian.Uint64(buf[8:])),
		offset:      int64(binary.BigEndian.Uint64(buf[16:])),
	}, nil
}
