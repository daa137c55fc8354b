// Package sampledlog rate-limits a repeated log message: the listener's
// refusals and the Raft stream layer's evictions, which a client opening
// connections as fast as it can would otherwise log once per connection.
package sampledlog

import (
	"sync"
	"time"
)

// Interval is how often a repeated message is logged.
const Interval = time.Second

// Log lets one message an Interval through and counts the ones held back,
// so the next that passes can say how many there were. The zero value is
// ready to use.
type Log struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// Allow reports whether to log now, and how many were held back since the
// last one logged.
func (s *Log) Allow() (suppressed int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Before(s.next) {
		s.suppressed++
		return 0, false
	}
	s.next = now.Add(Interval)
	suppressed, s.suppressed = s.suppressed, 0
	return suppressed, true
}
