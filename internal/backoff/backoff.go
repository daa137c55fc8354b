// Package backoff paces the retries of one operation: the one helper every
// retry loop in Floe uses (client calls, metadata forwarding and watches,
// follower fetchers, gossip joins), so they all grow, cap and jitter their
// waits the same way.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff paces retries: each Wait sleeps about the current delay, which
// starts at Min and doubles up to Max. With Jitter, a wait is drawn from
// [d/2, d], so that many callers meeting the same failure do not retry in
// step. The zero value waits 50 ms to 1 s with jitter off; Reset after a
// success starts again from Min.
type Backoff struct {
	// Min is the first delay (default 50 ms).
	Min time.Duration
	// Max caps the delay (default 1 s; never below Min).
	Max time.Duration
	// Jitter draws each wait from [d/2, d] instead of waiting d.
	Jitter bool

	next time.Duration
}

const (
	defaultMin = 50 * time.Millisecond
	defaultMax = time.Second
)

// Next returns how long the next Wait sleeps and moves the delay on.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = defaultMin
	}
	if hi <= 0 {
		hi = defaultMax
	}
	hi = max(hi, lo)
	if b.next < lo {
		b.next = lo
	}
	d := b.next
	b.next = min(2*b.next, hi)
	if b.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// Wait sleeps the next delay; false when ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	return Sleep(ctx, b.Next())
}

// Reset starts the delays again from Min, after a success.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits d or until ctx ends; false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
