package transport

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// FailureLimit bounds failed authentications per caller address: each
// address may fail Burst times in a row, then once per Interval; an
// address over its limit is refused before its exchange starts (and told
// to wait). Successes cost nothing. The addresses tracked are bounded too
// (MaxAddrs): when full, those whose allowance has grown back are
// forgotten, then the oldest.
type FailureLimit struct {
	// Burst is how many failures an address may have in a row. Default 10.
	Burst int
	// Interval is how often one more failure is allowed after a burst.
	// Default 1 s.
	Interval time.Duration
	// MaxAddrs bounds the addresses tracked. Default 10,000.
	MaxAddrs int
}

func (f FailureLimit) withDefaults() FailureLimit {
	if f.Burst <= 0 {
		f.Burst = 10
	}
	if f.Interval <= 0 {
		f.Interval = time.Second
	}
	if f.MaxAddrs <= 0 {
		f.MaxAddrs = 10_000
	}
	return f
}

// failureLimiter applies a FailureLimit.
type failureLimiter struct {
	cfg FailureLimit

	mu    sync.Mutex
	addrs map[netip.Addr]*addrFailures
	seq   uint64
}

type addrFailures struct {
	lim  *rate.Limiter
	last uint64 // order of the last failure, for forgetting the oldest
}

func newFailureLimiter(cfg FailureLimit) *failureLimiter {
	return &failureLimiter{cfg: cfg.withDefaults(), addrs: map[netip.Addr]*addrFailures{}}
}

// allowed reports whether addr may try to authenticate now.
func (l *failureLimiter) allowed(addr netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.addrs[addr]
	return !ok || f.lim.Tokens() >= 1
}

// failure counts a failed attempt of addr.
func (l *failureLimiter) failure(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	f, ok := l.addrs[addr]
	if !ok {
		if len(l.addrs) >= l.cfg.MaxAddrs {
			l.forgetLocked()
		}
		f = &addrFailures{lim: rate.NewLimiter(rate.Every(l.cfg.Interval), l.cfg.Burst)}
		l.addrs[addr] = f
	}
	f.last = l.seq
	f.lim.Allow()
}

// forgetLocked makes room: addresses back to their full allowance go, and
// if none has, the one whose last failure is oldest.
func (l *failureLimiter) forgetLocked() {
	var oldest netip.Addr
	var oldestSeq uint64
	for a, f := range l.addrs {
		if f.lim.Tokens() >= float64(l.cfg.Burst) {
			delete(l.addrs, a)
			continue
		}
		if oldestSeq == 0 || f.last < oldestSeq {
			oldest, oldestSeq = a, f.last
		}
	}
	if len(l.addrs) >= l.cfg.MaxAddrs {
		delete(l.addrs, oldest)
	}
}
