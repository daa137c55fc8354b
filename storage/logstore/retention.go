package logstore

import (
	"math"
	"time"
)

// RetentionBounds are the limits on retention that its owner knows and the
// log does not: what remote storage holds, and what must stay whatever its
// age (a primary-key table's changelog above its newest snapshot).
type RetentionBounds struct {
	// RemoteStart and RemoteEnd: the offsets in [RemoteStart, RemoteEnd)
	// are in committed remote storage, so the local rules
	// (Config.LocalRetentionSegments, LocalRetentionAge) may delete a
	// sealed segment wholly inside. Below RemoteStart the remote log holds
	// nothing (it starts later, or has a gap there), and what the log holds
	// there is the only copy: only the size and age rules take it. Zero
	// RemoteEnd: nothing is remote.
	RemoteStart int64
	RemoteEnd   int64
	// ExpireBelow: the size and age rules (Config.RetentionBytes,
	// RetentionAge) delete only segments wholly below it. A new log has
	// no such limit (math.MaxInt64).
	ExpireBelow int64
}

// Remote says whether remote storage holds every offset of [base, next),
// so the local rules may delete a segment holding them.
func (b RetentionBounds) Remote(base, next int64) bool {
	return base >= b.RemoteStart && next <= b.RemoteEnd
}

// noBounds is a new log's bounds: nothing remote, everything may expire.
var noBounds = RetentionBounds{ExpireBelow: math.MaxInt64}

// SetRetentionBounds replaces the bounds and applies retention soon (at
// once if due) when they allow more than before.
func (l *Log) SetRetentionBounds(b RetentionBounds) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.bounds
	l.bounds = b
	if b.RemoteEnd > old.RemoteEnd || b.RemoteStart < old.RemoteStart || b.ExpireBelow > old.ExpireBelow {
		l.armAt(taskRetentionAge, l.sched.now())
	}
}

// Bounds returns the retention bounds last set.
func (l *Log) Bounds() RetentionBounds {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bounds
}

// EnforceRetention deletes the oldest sealed segments that a rule lets go:
// while the log is over RetentionBytes (keeping at least that much), or
// their newest batch is older than RetentionAge, both only below
// RetentionBounds.ExpireBelow; or, inside [RemoteStart, RemoteEnd) of the
// bounds, by the local rules. The active segment is never deleted, and the log stays
// gap-free: deletion stops at the first segment no rule lets go. It returns
// how many segments went. The scheduler calls it after writes
// (RetentionBytes), when the oldest sealed segment expires (the ages) and
// when the bounds grow, at most RetentionCheckInterval late.
func (l *Log) EnforceRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	segs := *l.segs.Load()
	var total int64
	for _, s := range segs {
		total += s.size
	}
	nowMs := nowMillis(l.cfg.Now)
	olderThan := func(s *segment, age int64) bool { return s.size > 0 && s.index.maxTime() < nowMs-age }
	sealed := len(segs) - 1
	n := 0
	for i, s := range segs[:sealed] {
		expirable := s.nextOffset <= l.bounds.ExpireBelow
		bySize := expirable && l.cfg.RetentionBytes > 0 && total-s.size >= l.cfg.RetentionBytes
		byAge := expirable && l.cfg.RetentionAge > 0 && olderThan(s, l.cfg.RetentionAge.Milliseconds())
		remote := l.bounds.Remote(s.base, s.nextOffset)
		byLocalCount := remote && l.cfg.LocalRetentionSegments > 0 && sealed-i-1 >= l.cfg.LocalRetentionSegments
		byLocalAge := remote && l.cfg.LocalRetentionAge > 0 && olderThan(s, l.cfg.LocalRetentionAge.Milliseconds())
		if !bySize && !byAge && !byLocalCount && !byLocalAge {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		l.armRetentionLocked(l.cfg.RetentionCheckInterval, nowMs)
		return 0, nil
	}
	kept := append([]*segment(nil), segs[n:]...)
	l.publishSegments(kept)
	if err := l.epochs.truncateFromStart(kept[0].base); err != nil {
		return 0, err
	}
	for _, s := range segs[:n] {
		l.logger.Info("retention deleted segment", "base_offset", s.base, "next_offset", s.nextOffset, "bytes", s.size,
			"remote", l.bounds.Remote(s.base, s.nextOffset))
		if err := s.remove(); err != nil {
			return 0, err
		}
	}
	l.armRetentionLocked(l.cfg.RetentionCheckInterval, nowMs)
	return n, nil
}

// AgeRetention is the part of a log's retention that a table's properties
// set and ALTER TABLE changes on an open log: Config's RetentionAge,
// LocalRetentionSegments and LocalRetentionAge.
type AgeRetention struct {
	RetentionAge           time.Duration
	LocalRetentionSegments int
	LocalRetentionAge      time.Duration
}

// SetAgeRetention replaces the log's age and local retention and applies
// retention soon, as the new limits may let segments go now.
func (l *Log) SetAgeRetention(r AgeRetention) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.RetentionAge == r.RetentionAge && l.cfg.LocalRetentionSegments == r.LocalRetentionSegments &&
		l.cfg.LocalRetentionAge == r.LocalRetentionAge {
		return
	}
	l.cfg.RetentionAge, l.cfg.LocalRetentionSegments, l.cfg.LocalRetentionAge = r.RetentionAge, r.LocalRetentionSegments, r.LocalRetentionAge
	l.armAt(taskRetentionAge, l.sched.now())
}
