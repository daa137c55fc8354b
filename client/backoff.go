package client

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff paces the retries of one operation: waits grow from
// retryBackoffMin to retryBackoffMax, with jitter so that many clients
// meeting the same failure do not retry in step. The zero value is ready.
type backoff struct {
	next time.Duration
}

// wait sleeps before the next attempt and reports false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	if b.next == 0 {
		b.next = retryBackoffMin
	}
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(2*b.next, retryBackoffMax)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
