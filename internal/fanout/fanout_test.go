package fanout

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEachBoundsConcurrency checks every item runs once and no more than
// limit run at a time.
func TestEachBoundsConcurrency(t *testing.T) {
	for _, limit := range []int{0, 1, 3, 64} {
		items := make([]int, 50)
		for i := range items {
			items[i] = i
		}
		var running, peak atomic.Int32
		var mu sync.Mutex
		var seen []int
		release := make(chan struct{})
		go func() {
			// Let the calls pile up against the bound before any ends.
			for range items {
				release <- struct{}{}
			}
		}()
		Each(items, limit, func(i int) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			running.Add(-1)
			mu.Lock()
			seen = append(seen, i)
			mu.Unlock()
		})
		slices.Sort(seen)
		if !slices.Equal(seen, items) {
			t.Fatalf("limit %d: ran %v", limit, seen)
		}
		if want := int32(max(limit, 1)); peak.Load() > want {
			t.Fatalf("limit %d: %d ran at once", limit, peak.Load())
		}
	}
}

// TestUntilSkipsWhatDidNotStart checks that once the context ends, the
// items not started go to skipped and never run.
func TestUntilSkipsWhatDidNotStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran, skipped []int
	var mu sync.Mutex
	Until(ctx, []int{1, 2, 3, 4, 5}, 1, func(i int) {
		mu.Lock()
		ran = append(ran, i)
		mu.Unlock()
		if i == 2 {
			cancel()
		}
	}, func(i int) { skipped = append(skipped, i) })
	if !slices.Equal(ran, []int{1, 2}) || !slices.Equal(skipped, []int{3, 4, 5}) {
		t.Fatalf("ran %v, skipped %v", ran, skipped)
	}
}

// TestFirstErrorStopsTheRest checks the first failure is returned, the
// others see their context cancelled, and nothing starts after it.
func TestFirstErrorStopsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	err := FirstError(context.Background(), []int{1, 2, 3, 4}, 1, func(ctx context.Context, i int) error {
		started.Add(1)
		if i == 2 {
			return boom
		}
		return ctx.Err()
	})
	if !errors.Is(err, boom) || started.Load() != 2 {
		t.Fatalf("err %v after %d calls, want boom after 2", err, started.Load())
	}
	if err := FirstError(context.Background(), []int{1, 2, 3}, 2, func(context.Context, int) error { return nil }); err != nil {
		t.Fatalf("no failure: %v", err)
	}
}
