package transport

import (
	"sync"
	"time"
)

// sampledLogInterval is how often a repeated refusal is logged. A client
// opening connections as fast as it can would otherwise write a log line
// per connection.
const sampledLogInterval = time.Second

// sampledLog lets one message a sampledLogInterval through and counts the
// ones held back, so the next that passes can say how many there were.
type sampledLog struct {
	mu         sync.Mutex
	next       time.Time
	suppressed int
}

// allow reports whether to log now, and how many were held back since the
// last one logged.
func (s *sampledLog) allow() (suppressed int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Before(s.next) {
		s.suppressed++
		return 0, false
	}
	s.next = now.Add(sampledLogInterval)
	suppressed, s.suppressed = s.suppressed, 0
	return suppressed, true
}
