package logstore

// EnforceRetention deletes the oldest sealed segments while the log is over
// RetentionBytes (keeping at least that much) or their newest batch is older
// than RetentionAge. The active segment is never deleted. It returns how many
// segments went. The scheduler calls it after writes (RetentionBytes) and
// when the oldest sealed segment expires (RetentionAge), at most
// RetentionCheckInterval late.
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
	n := 0
	for _, s := range segs[:len(segs)-1] {
		bySize := l.cfg.RetentionBytes > 0 && total-s.size >= l.cfg.RetentionBytes
		byAge := l.cfg.RetentionAge > 0 && s.size > 0 && s.index.maxTime() < nowMs-l.cfg.RetentionAge.Milliseconds()
		if !bySize && !byAge {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		l.armRetentionAgeLocked()
		return 0, nil
	}
	kept := append([]*segment(nil), segs[n:]...)
	l.publishSegments(kept)
	if err := l.epochs.truncateFromStart(kept[0].base); err != nil {
		return 0, err
	}
	for _, s := range segs[:n] {
		l.logger.Info("retention deleted segment", "base_offset", s.base, "next_offset", s.nextOffset, "bytes", s.size)
		if err := s.remove(); err != nil {
			return 0, err
		}
	}
	l.armRetentionAgeLocked()
	return n, nil
}
