package logstore

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

const recoveryPointFile = "recovery-point"

// recover reads the log's state, rebuilds what is missing and cuts the torn
// tail of the last segment. It opens only the last segment's file: sealed
// segments are described by their size and index files, and opened by their
// first read.
func (l *Log) recover() error {
	files, err := l.scanDir()
	if err != nil {
		return err
	}
	l.epochs, err = loadEpochCache(l.cfg.Dir)
	if err != nil {
		return err
	}
	rp, rpErr := l.readRecoveryPoint()
	if rpErr != nil && !errors.Is(rpErr, os.ErrNotExist) {
		l.logger.Warn("recovery point unreadable, scanning the whole last segment", "err", rpErr)
	}
	var marked int64
	if l.mark, marked, err = openDurableMark(l.cfg.Dir, l.sched.marks); err != nil {
		return err
	}
	defer func() {
		if l.writtenEnd < marked {
			l.lostFrom = l.writtenEnd
			l.logger.Error("log ends before what it had made durable: batches lost from its end", "end_offset", l.writtenEnd,
				"durable_mark", marked)
		}
	}()
	if len(files) == 0 {
		s, err := createSegment(l, 0)
		if err != nil {
			return err
		}
		if err := syncDir(l.cfg.Dir); err != nil {
			return err
		}
		l.publishSegments([]*segment{s})
		l.active = s
		if err := l.epochs.clampToEnd(0); err != nil {
			return err
		}
		return l.recoverSyncFailed(rp, rpErr)
	}

	segs := make([]*segment, 0, len(files))
	for i, f := range files {
		s := newSegment(l, f.base)
		s.allocated = f.bytes
		segs = append(segs, s)
		l.publishSegments(segs) // so a failure closes what is open
		if i < len(files)-1 {
			err = l.recoverSealed(s, files[i+1].base)
		} else {
			err = l.recoverActive(s, rp)
		}
		if err != nil {
			return err
		}
	}
	l.active = segs[len(segs)-1]
	l.writtenEnd = l.active.nextOffset
	for _, s := range segs {
		l.lastTimestamp = max(l.lastTimestamp, s.index.maxTime())
	}
	l.readableEnd.Store(l.writtenEnd)
	l.writtenPub.Store(l.writtenEnd)
	pos := logPosition{segmentBase: l.active.base, pos: l.active.size, offset: l.writtenEnd}
	l.durable, l.checkpointed, l.checkpointSynced = pos, rp, true
	if err := l.epochs.clampToEnd(l.writtenEnd); err != nil {
		return err
	}
	if err := l.epochs.truncateFromStart(segs[0].base); err != nil {
		return err
	}
	if err := l.recoverSyncFailed(rp, rpErr); err != nil {
		return err
	}
	l.logger.Debug("log opened", "segments", len(segs), "start_offset", segs[0].base, "end_offset", l.writtenEnd)
	return l.writeRecoveryPoint()
}

// segmentFileInfo is a segment file found at Open.
type segmentFileInfo struct {
	base  int64
	bytes int64
}

// scanDir returns the segment files, oldest first, and removes leftovers:
// temporary files, segments marked deleted, orphaned indexes.
func (l *Log) scanDir() ([]segmentFileInfo, error) {
	entries, err := os.ReadDir(l.cfg.Dir)
	if err != nil {
		return nil, pkgerr.Errorf("logstore", "%w", err)
	}
	var files []segmentFileInfo
	logs := map[string]bool{}
	for _, e := range entries {
		base, ok := parseSegmentName(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, pkgerr.Errorf("logstore", "%w", err)
		}
		files = append(files, segmentFileInfo{base: base, bytes: info.Size()})
		logs[segmentName(base)] = true
	}
	for _, e := range entries {
		name := e.Name()
		stem, _, _ := strings.Cut(name, ".")
		orphanIndex := (strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix)) && !logs[stem]
		if strings.HasSuffix(name, tmpSuffix) || strings.HasSuffix(name, deletedSuffix) || orphanIndex {
			if err := os.Remove(filepath.Join(l.cfg.Dir, name)); err != nil {
				return nil, pkgerr.Errorf("logstore", "remove leftover: %w", err)
			}
		}
	}
	slices.SortFunc(files, func(a, b segmentFileInfo) int { return cmp.Compare(a.base, b.base) })
	return files, nil
}

// recoverSealed describes a sealed segment from its size and index files,
// without opening it: its batches are checked when it is first read (see
// readBatchAt). Missing or damaged indexes are rebuilt from the segment,
// the one case that reads it here.
func (l *Log) recoverSealed(s *segment, nextBase int64) error {
	s.size = s.allocated
	s.nextOffset = nextBase
	s.setSealed(true, 0)
	s.readable.Store(s.size)
	s.written.Store(s.size)
	if err := s.loadIndexes(); err != nil {
		l.logger.Info("rebuilding segment index", "base_offset", s.base, "reason", err)
		if err := l.rebuildIndex(s); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				return err
			}
			// The index covers the batches before the damage, and reads
			// report the damage where it starts, as for any sealed segment.
			// The index is not saved: the next Open rebuilds it again.
			l.logger.Warn("sealed segment damaged", "base_offset", s.base, "err", err)
			return nil
		}
		if err := s.writeIndexes(); err != nil {
			return err
		}
	}
	return nil
}

// rebuildIndex walks every batch header of s, trusting the data (sealed
// segments were fsynced whole before they were sealed) up to the first
// damaged header, which it returns as a *CorruptError.
func (l *Log) rebuildIndex(s *segment) error {
	m, err := s.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	s.index.reset()
	for pos, next := int64(0), s.base; pos < s.size; {
		b, err := s.readBatchAt(m, pos, s.size, next)
		if err != nil {
			return err
		}
		s.index.observe(s.base, b, pos)
		pos += int64(len(b))
		next = b.NextOffset()
	}
	return nil
}

// recoverActive finds the end of the last segment: header walk up to the
// recovery point, CRC scan after it, torn tail cut off.
func (l *Log) recoverActive(s *segment, rp logPosition) error {
	s.removeIndexes() // rebuilt here and rewritten when sealed
	s.setSealed(false, max(l.cfg.SegmentMaxBytes, s.allocated))
	m, err := s.acquire()
	if err != nil {
		return err
	}
	defer m.release()
	limit := s.allocated
	trusted := int64(0)
	if rp.segmentBase == s.base && rp.pos <= limit {
		trusted = rp.pos
	}
	pos, next := int64(0), s.base
	for pos < trusted {
		b, err := s.batchAt(m.data, pos, limit, next)
		if err == nil && pos+int64(len(b)) > trusted {
			err = &CorruptError{Offset: next, SegmentBase: s.base, Position: pos,
				Err: fmt.Errorf("batch of %d bytes crosses the recovery point %d", len(b), trusted)}
		}
		if err != nil {
			return fmt.Errorf("below the recovery point: %w", err)
		}
		s.index.observe(s.base, b, pos)
		pos += int64(len(b))
		next = b.NextOffset()
	}
	scanned := 0
	var end *TailError
	for pos < limit {
		var b record.Batch
		if b, end = checkBatchAt(m.data[pos:limit], pos); end != nil {
			break
		}
		if b.BaseOffset() != next {
			end = &TailError{Position: pos, Reason: TailTorn,
				Detail: fmt.Sprintf("batch at byte %d has offset %d, expected %d", pos, b.BaseOffset(), next)}
			break
		}
		if err := l.recoverEpoch(b); err != nil {
			return err
		}
		s.index.observe(s.base, b, pos)
		pos += int64(len(b))
		next = b.NextOffset()
		scanned++
	}
	s.size, s.nextOffset = pos, next
	s.readable.Store(pos)
	s.written.Store(pos)
	if pos > 0 {
		s.firstAppend = nowMillis(l.cfg.Now)
	}
	if pos < limit {
		if end != nil && end.Reason != TailZero {
			l.logger.Warn("truncated torn log tail", "segment", s.base, "position", pos, "end_offset", next,
				"discarded_bytes_max", limit-pos, "reason", end.Detail)
		}
		// Cut the file so no stale batch past the end can ever be read back.
		if err := s.trim(); err != nil {
			return err
		}
	}
	// Batches past the recovery point may be in the page cache only (the
	// process died before their fsync, the machine did not): the log counts
	// them durable, so they are made durable before it does. A trimmed
	// tail is synced with them.
	if scanned > 0 || pos < limit {
		if err := l.syncSegmentLocked(s, true); err != nil {
			return err
		}
	}
	l.logger.Debug("recovered active segment", "segment", s.base, "trusted_bytes", trusted, "scanned_batches", scanned)
	return nil
}

// recoverEpoch adds the epoch of a batch found past the recovery point, as
// the epoch cache may not have been persisted when it was appended.
func (l *Log) recoverEpoch(b record.Batch) error {
	if last, ok := l.epochs.latest(); ok && b.LeaderEpoch() <= last.Epoch {
		return nil
	}
	return l.epochs.assign(b.LeaderEpoch(), b.BaseOffset())
}

func (l *Log) readRecoveryPoint() (logPosition, error) {
	buf, err := readCheckpoint(l.cfg.Dir, recoveryPointFile)
	if err != nil {
		return logPosition{}, err
	}
	return decodePosition(recoveryPointFile, buf)
}

// writeRecoveryPoint checkpoints the durable position, durably, if it
// moved or was only checkpointed to the page cache. Callers hold mu or run
// alone (background loop); cpMu orders the writes. A failed log
// checkpoints nothing: its sync-failed marker says where it was durable.
func (l *Log) writeRecoveryPoint() error { return l.checkpointRecoveryPoint(true) }

// checkpointRecoveryPoint is writeRecoveryPoint; without durable, it
// leaves the file to the page cache. The periodic checkpoint does that:
// the data below the position is fsynced already, so losing the file in a
// crash only makes recovery scan from an older point, and fsyncing it (and
// its folder) every second for every busy log would double a node's
// fsyncs. Close, roll and truncation write it durably.
func (l *Log) checkpointRecoveryPoint(durable bool) error {
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	l.syncMu.Lock()
	pos, failed := l.durable, l.failure != nil
	l.syncMu.Unlock()
	if failed || (pos == l.checkpointed && (l.checkpointSynced || !durable)) {
		return nil
	}
	if !durable {
		if err := writeCheckpointCached(l.cfg.Dir, recoveryPointFile, encodePosition(pos)); err != nil {
			return err
		}
		l.checkpointed, l.checkpointSynced = pos, false
		return nil
	}
	return l.writeRecoveryPointLocked(pos)
}

func (l *Log) writeRecoveryPointLocked(pos logPosition) error {
	if err := writeCheckpoint(l.cfg.Dir, recoveryPointFile, encodePosition(pos)); err != nil {
		return err
	}
	l.checkpointed, l.checkpointSynced = pos, true
	return nil
}
