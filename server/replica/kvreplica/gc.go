package kvreplica

import (
	"errors"
	"time"

	"github.com/floedb/floe/storage/kvstore"
)

// The node's value-log collector, paced by the garbage it finds: every
// gcInterval it checks the node's database for value-log files that are
// mostly garbage and rewrites them one at a time until none is left. A
// file at least gcBacklogDiscard garbage means overwrites are outrunning
// the collector: it is rewritten at once, with no rest, and costs little
// for the space it frees (a rewrite looks up every row of its 64 MiB file,
// about a second here, but moves only the few live ones). A file only
// past the configured share (kvstore.Config.GCDiscardRatio, half by
// default) is rewritten with a rest as long as the rewrite took, so a
// node that overwrites slowly spends at most about half a core on it.
// Without the fast lane, a node overwriting at full speed on a busy
// machine piled up files faster than the rested collector reclaimed them
// (4.6× the live rows on disk after two minutes, BenchmarkSustainedOverwrites
// and floe bench upsert --load); rewriting every file at half garbage
// without rests kept the space at 1.9× but took 40% of the write
// throughput.
const (
	gcInterval       = 5 * time.Second
	gcRestFactor     = 1
	gcBacklogDiscard = 0.65
	// gcMaxFilesPerRound bounds one round, so a close is never kept
	// waiting behind a long backlog.
	gcMaxFilesPerRound = 64
)

// gcTarget is what the collector needs of the database.
type gcTarget interface {
	CollectGarbage(maxFiles int, minDiscard float64) (int, error)
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
// that is mostly garbage, up to gcMaxFilesPerRound: first any file at
// least gcBacklogDiscard garbage, with no rest, else one past the
// configured share, then calling rest with gcRestFactor times the
// rewrite's duration. rest returning false (the node is closing) or an
// error ends the round. It returns the files rewritten.
func (t *Tables) collectGarbageRound(target gcTarget, rest func(time.Duration) bool) int {
	files := 0
	for files < gcMaxFilesPerRound {
		start := time.Now()
		n, err := target.CollectGarbage(1, max(gcBacklogDiscard, t.cfg.DB.GCDiscardRatio))
		backlog := n > 0
		if err == nil && !backlog {
			n, err = target.CollectGarbage(1, 0)
		}
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
		t.log.Debug("KV value-log GC", "files_rewritten", n, "backlog", backlog, "took", took)
		if backlog {
			if t.closing() {
				return files
			}
			continue
		}
		if !rest(took * gcRestFactor) {
			return files
		}
	}
	return files
}

// closing reports whether the tables are closing.
func (t *Tables) closing() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}
