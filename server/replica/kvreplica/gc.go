package kvreplica

import (
	"errors"
	"time"

	"github.com/floedb/floe/storage/kvstore"
)

// The node's value-log collector: every gcInterval it checks the node's
// database for a value-log file that is mostly garbage and rewrites such
// files one at a time until none is left. After each rewrite it rests as
// long as the rewrite took: with a backlog it takes about half a core,
// enough to reclaim overwrites as fast as the node's stores write them (a
// rewrite checks every row of a 64 MiB file, about a second here), and it
// never rewrites files back to back.
const (
	gcInterval   = 5 * time.Second
	gcRestFactor = 1
	// gcMaxFilesPerRound bounds one round, so a close is never kept
	// waiting behind a long backlog.
	gcMaxFilesPerRound = 64
)

// gcTarget is what the collector needs of the database.
type gcTarget interface {
	CollectGarbage(maxFiles int) (int, error)
}

// collectGarbage reclaims the value-log space of overwritten and deleted
// rows in the node's database until the tables close.
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
		t.collectGarbageRound(t.db, rest)
	}
}

// collectGarbageRound rewrites one file at a time while target has one
// that is mostly garbage, up to gcMaxFilesPerRound, calling rest after each
// rewrite with gcRestFactor times its duration; rest returning false (the
// node is closing) or an error ends the round. It returns the files
// rewritten.
func (t *Tables) collectGarbageRound(target gcTarget, rest func(time.Duration) bool) int {
	files := 0
	for files < gcMaxFilesPerRound {
		start := time.Now()
		n, err := target.CollectGarbage(1)
		took := time.Since(start)
		if err != nil {
			if !errors.Is(err, kvstore.ErrClosed) {
				t.log.Warn("KV value-log GC", "err", err)
			}
			return files
		}
		if n == 0 {
			return files
		}
		files += n
		t.log.Debug("KV value-log GC", "files_rewritten", n, "took", took)
		if !rest(took * gcRestFactor) {
			return files
		}
	}
	return files
}
