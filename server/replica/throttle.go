package replica

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A move's joining replicas (learners: in the replica set, outside the ISR,
// added by a move) copy a bucket's local tail from their leaders and, below
// it, from remote storage. The cluster's move throttle (MoveBounds,
// `--throttle`) bounds the bytes per second a node lets them copy, so a
// rebalance does not take the disk and network its clients use. Replicas
// in the ISR, and followers that fell behind for other reasons, are never
// throttled: holding them back would cost acknowledged writes their copies.

// moveThrottle is a node's bound on its learners' catch-up bytes.
type moveThrottle struct {
	mu  sync.Mutex
	bps int64
	lim *rate.Limiter // nil: no bound
}

// set changes the bound; 0 or less: none.
func (t *moveThrottle) set(bytesPerS int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if bytesPerS == t.bps {
		return
	}
	t.bps = max(bytesPerS, 0)
	if t.bps == 0 {
		t.lim = nil
		return
	}
	// A tenth of a second's bytes at once: learners' fetches are admitted
	// while the bucket holds tokens and their bytes are taken after, so
	// the bound holds on average over a few fetches.
	t.lim = rate.NewLimiter(rate.Limit(t.bps), int(max(t.bps/10, 64<<10)))
}

// bound returns the bound in bytes per second, 0: none.
func (t *moveThrottle) bound() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bps
}

// admit reports whether a learner may fetch now: the bucket is not in
// debt.
func (t *moveThrottle) admit(now time.Time) bool {
	t.mu.Lock()
	lim := t.lim
	t.mu.Unlock()
	return lim == nil || lim.TokensAt(now) > 0
}

// take records n bytes learners copied, into debt if need be; the time
// until the bucket is out of debt again is returned.
func (t *moveThrottle) take(now time.Time, n int) time.Duration {
	t.mu.Lock()
	lim := t.lim
	t.mu.Unlock()
	if lim == nil || n <= 0 {
		return 0
	}
	var wait time.Duration
	for n > 0 {
		k := min(n, lim.Burst())
		wait = max(wait, lim.ReserveN(now, k).DelayFrom(now))
		n -= k
	}
	return wait
}

// wait takes n bytes and sleeps until the bucket is out of debt, or ctx
// ends.
func (t *moveThrottle) wait(ctx context.Context, n int) error {
	d := t.take(time.Now(), n)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
