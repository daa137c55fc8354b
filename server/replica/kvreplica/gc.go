package kvreplica

import (
	"errors"
	"time"

	"github.com/floedb/floe/storage/kvstore"
)

// The node's value-log collector: every gcInterval it checks each KV store
// for a value-log file that is mostly garbage, rewrites at most one per
// store per round, and starts another round at once while any store had
// one. After each rewrite it rests as long as the rewrite took: with a
// backlog it takes about half a core, enough to reclaim overwrites as fast
// as a node's stores write them (a rewrite checks every row of a 64 MiB
// file, about a second here), and it never rewrites files back to back.
const (
	gcInterval   = 5 * time.Second
	gcRestFactor = 1
)

// gcTarget is what the collector needs of a store.
type gcTarget interface {
	CollectGarbage(maxFiles int) (int, error)
}

// collectGarbage reclaims the value-log space of overwritten and deleted
// rows in every open KV store of the node until the tables close.
func (t *Tables) collectGarbage() {
	tick := time.NewTicker(gcInterval)
	defer tick.Stop()
	rest := func(d time.Duration) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-t.stop:
			return false
		case <-timer.C:
			return true
		}
	}
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		for t.collectGarbageRound(t.stores(), rest) {
		}
	}
}

// stores lists the open KV replicas' current stores by bucket.
func (t *Tables) stores() map[string]gcTarget {
	t.mu.Lock()
	defer t.mu.Unlock()
	stores := make(map[string]gcTarget, len(t.open))
	for kv := range t.open {
		stores[kv.id] = kv.store.Load()
	}
	return stores
}

// collectGarbageRound rewrites at most one file of each store, calling
// rest after each rewrite with gcRestFactor times its duration; rest
// returning false stops the round. It reports whether the round rewrote
// anything and may be repeated.
func (t *Tables) collectGarbageRound(stores map[string]gcTarget, rest func(time.Duration) bool) bool {
	rewrote := false
	for bucket, st := range stores {
		start := time.Now()
		n, err := st.CollectGarbage(1)
		took := time.Since(start)
		switch {
		case err != nil && !errors.Is(err, kvstore.ErrClosed):
			t.log.Warn("KV value-log GC", "bucket", bucket, "err", err)
		case n > 0:
			rewrote = true
			t.log.Debug("KV value-log GC", "bucket", bucket, "files_rewritten", n, "took", took)
			if !rest(took * gcRestFactor) {
				return false
			}
		}
	}
	return rewrote
}
