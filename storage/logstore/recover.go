package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/floedb/floe/storage/record"
)

const recoveryPointFile = "recovery-point"

// recover opens every segment, rebuilds what is missing and cuts the torn
// tail of the last segment.
func (l *Log) recover() error {
	bases, err := l.scanDir()
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
	if len(bases) == 0 {
		s, err := openSegment(l.cfg.Dir, 0, true, l.cfg.SegmentMaxBytes, l.cfg.PreallocateBytes, l.cfg.IndexIntervalBytes)
		if err != nil {
			return err
		}
		if err := syncDir(l.cfg.Dir); err != nil {
			s.release()
			return err
		}
		l.publishSegments([]*segment{s})
		l.active = s
		if err := l.epochs.clampToEnd(0); err != nil {
			return err
		}
		return l.recoverSyncFailed(rp, rpErr)
	}

	segs := make([]*segment, 0, len(bases))
	for i, base := range bases {
		// Sealed segments are mapped to their size, the active one to the
		// segment size it may grow to.
		mapLen := l.cfg.SegmentMaxBytes
		if i < len(bases)-1 {
			mapLen = 0
		}
		s, err := openSegment(l.cfg.Dir, base, false, mapLen, l.cfg.PreallocateBytes, l.cfg.IndexIntervalBytes)
		if err != nil {
			for _, o := range segs {
				o.release()
			}
			return err
		}
		segs = append(segs, s)
		l.publishSegments(segs) // so a failure releases what is open
		if i < len(bases)-1 {
			err = l.recoverSealed(s, bases[i+1])
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
		l.lastTimestamp = max(l.lastTimestamp, s.index.maxTimestamp)
	}
	l.readableEnd.Store(l.writtenEnd)
	l.writtenPub.Store(l.writtenEnd)
	pos := logPosition{segmentBase: l.active.base, pos: l.active.size, offset: l.writtenEnd}
	l.durable, l.checkpointed = pos, rp
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

// scanDir returns the segment base offsets, oldest first, and removes
// leftovers: temporary files, segments marked deleted, orphaned indexes.
func (l *Log) scanDir() ([]int64, error) {
	entries, err := os.ReadDir(l.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("logstore: %w", err)
	}
	var bases []int64
	logs := map[string]bool{}
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok {
			bases = append(bases, base)
			logs[segmentName(base)] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		stem, _, _ := strings.Cut(name, ".")
		orphanIndex := (strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix)) && !logs[stem]
		if strings.HasSuffix(name, tmpSuffix) || strings.HasSuffix(name, deletedSuffix) || orphanIndex {
			if err := os.Remove(filepath.Join(l.cfg.Dir, name)); err != nil {
				return nil, fmt.Errorf("logstore: remove leftover: %w", err)
			}
		}
	}
	slices.Sort(bases)
	return bases, nil
}

// recoverSealed checks a sealed segment: indexes load (or are rebuilt), and
// the last batch ends exactly at the file's end where the next segment begins.
func (l *Log) recoverSealed(s *segment, nextBase int64) error {
	s.size, s.sealed = s.allocated, true
	s.readable.Store(s.size)
	s.written.Store(s.size)
	if err := s.loadIndexes(); err != nil {
		l.logger.Info("rebuilding segment index", "base_offset", s.base, "reason", err)
		if err := l.rebuildIndex(s); err != nil {
			return err
		}
		if err := s.writeIndexes(); err != nil {
			return err
		}
	}
	// Walk the headers after the last index entry to find the segment's end.
	pos, rel := s.index.floor(^uint32(0))
	next := s.base + int64(rel)
	for pos < s.size {
		b, err := s.batchAt(pos, s.size, next)
		if err != nil {
			return fmt.Errorf("sealed segment: %w", err)
		}
		next = b.NextOffset()
		pos += int64(len(b))
	}
	if s.size > 0 && next != nextBase {
		return fmt.Errorf("%w: sealed segment %d ends at offset %d but the next segment starts at %d",
			ErrCorrupt, s.base, next, nextBase)
	}
	s.nextOffset = nextBase
	return nil
}

// rebuildIndex walks every batch header of s, trusting the data (sealed
// segments were fsynced whole before they were sealed).
func (l *Log) rebuildIndex(s *segment) error {
	s.index.reset()
	for pos, next := int64(0), s.base; pos < s.size; {
		b, err := s.batchAt(pos, s.size, next)
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
	limit := s.allocated
	trusted := int64(0)
	if rp.segmentBase == s.base && rp.pos <= limit {
		trusted = rp.pos
	}
	pos, next := int64(0), s.base
	for pos < trusted {
		b, err := s.batchAt(pos, limit, next)
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
	for pos < limit {
		b, err := record.Check(s.data[pos:limit])
		if err != nil || b.BaseOffset() != next {
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
		if tail := s.data[pos:min(limit, pos+record.HeaderSize)]; slices.ContainsFunc(tail, func(c byte) bool { return c != 0 }) {
			l.logger.Warn("truncated torn log tail", "segment", s.base, "position", pos, "end_offset", next,
				"discarded_bytes_max", limit-pos)
		}
		// Cut the file so no stale batch past the end can ever be read back.
		if err := s.trim(); err != nil {
			return err
		}
		if err := l.syncSegment(s, true); err != nil {
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

// writeRecoveryPoint checkpoints the durable position if it moved. Callers
// hold mu or run alone (background loop); cpMu orders the writes. A failed
// log checkpoints nothing: its sync-failed marker says where it was durable.
func (l *Log) writeRecoveryPoint() error {
	l.cpMu.Lock()
	defer l.cpMu.Unlock()
	l.syncMu.Lock()
	pos, failed := l.durable, l.failure != nil
	l.syncMu.Unlock()
	if failed || pos == l.checkpointed {
		return nil
	}
	return l.writeRecoveryPointLocked(pos)
}

func (l *Log) writeRecoveryPointLocked(pos logPosition) error {
	if err := writeCheckpoint(l.cfg.Dir, recoveryPointFile, encodePosition(pos)); err != nil {
		return err
	}
	l.checkpointed = pos
	return nil
}
