// Package fanout runs a function over many items, a bounded number at a
// time: the one way Floe overlaps independent waits (fsyncs of many
// buckets, calls to many nodes, reads of many buckets) without starting an
// unbounded number of goroutines.
package fanout

import (
	"context"
	"sync"
)

// Each calls fn for every item, at most limit at a time, and returns once
// every call has. The last item runs on the caller's goroutine, so a
// single item costs no goroutine at all.
func Each[T any](items []T, limit int, fn func(T)) {
	Until(context.Background(), items, limit, fn, nil)
}

// Until is Each that stops starting calls once ctx ends: every item not
// started by then is passed to skipped instead (when skipped is not nil).
// Calls already running are not interrupted; fn sees ctx through its own
// closure if it should.
func Until[T any](ctx context.Context, items []T, limit int, fn func(T), skipped func(T)) {
	limit = max(limit, 1)
	var wg sync.WaitGroup
	slots := make(chan struct{}, limit)
	for i, it := range items {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if skipped != nil {
				for _, rest := range items[i:] {
					skipped(rest)
				}
			}
			break
		}
		if i == len(items)-1 {
			fn(it)
			<-slots
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(it)
		})
	}
	wg.Wait()
}

// FirstError calls fn for every item, at most limit at a time, until one
// fails: that failure cancels the context the others run with, no item
// starts after it, and FirstError returns it once the calls running have
// returned.
func FirstError[T any](ctx context.Context, items []T, limit int, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	Until(ctx, items, limit, func(it T) {
		if err := fn(ctx, it); err != nil {
			cancel(err)
		}
	}, nil)
	return context.Cause(ctx)
}
