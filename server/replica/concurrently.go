package replica

import "sync"

// forEachConcurrently calls fn for every item, at most limit at a time, and
// returns once all calls have. The last item runs on the caller's
// goroutine (a single one, then, costs no goroutine at all).
// It is how a node overlaps the fsyncs of many buckets (a follower's fetch,
// the replicas a metadata update opens) instead of paying them one after
// another.
func forEachConcurrently[T any](items []T, limit int, fn func(T)) {
	if len(items) <= 1 || limit <= 1 {
		for _, it := range items {
			fn(it)
		}
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, limit)
	for _, it := range items[:len(items)-1] {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(it)
		})
	}
	slots <- struct{}{}
	fn(items[len(items)-1])
	<-slots
	wg.Wait()
}
