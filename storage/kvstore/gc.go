package kvstore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// gcDiscardRatio: a value-log file is rewritten once at least this share of
// it is garbage (overwritten or deleted rows).
const gcDiscardRatio = 0.5

// CollectGarbage rewrites up to maxFiles value-log files that are mostly
// garbage and returns how many it rewrote. It competes with Apply for
// I/O, so callers run it now and then (Badger suggests every few minutes),
// not in a loop.
func (s *Store) CollectGarbage(maxFiles int) (int, error) {
	s.gcMu.Lock() // Close waits for a running collection
	defer s.gcMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	n := 0
	for n < maxFiles {
		err := s.db.RunValueLogGC(gcDiscardRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("kvstore: value-log GC: %w", err)
		}
		n++
	}
	return n, nil
}
