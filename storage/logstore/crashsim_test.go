package logstore

// crash abandons the log the way a killed process would: no fsync, no
// recovery point, mappings dropped. Test-only.
func (l *Log) crash() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.job.stop()
	l.releaseAll()
}
