package client

import (
	"context"
	"sync"
)

// byteBudget bounds the bytes a writer holds: rows appended and not yet
// acknowledged or failed. Taking blocks while the budget is spent.
type byteBudget struct {
	limit int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed and replaced by every give
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, freed: make(chan struct{})}
}

// take reserves n bytes, waiting while they do not fit, until ctx ends or
// stop is closed (then it returns errStop). A request larger than the whole
// budget is granted when nothing else is held, so it cannot wait forever.
func (b *byteBudget) take(ctx context.Context, n int64, stop <-chan struct{}, errStop error) error {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return errStop
		}
	}
}

// give returns n bytes and wakes the waiters.
func (b *byteBudget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes held.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// isClosed reports whether a signal channel is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
