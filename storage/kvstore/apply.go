package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// Change is one changelog record to write to the store: the primary key of
// a row, the row, and what the record does.
type Change struct {
	// Key is the primary key in the KeyEncoder form; never empty.
	Key []byte
	// Row is the row for Insert and UpdateAfter, and the last row for
	// Delete (unused by Apply). UpdateBefore rows are ignored.
	Row []byte
	// Kind is Insert, UpdateBefore, UpdateAfter or Delete.
	Kind record.ChangeType
	// SchemaID is the schema version Row is written in: its changelog
	// batch's. The store keeps it with the row.
	SchemaID int16
	// Offset is the record's log offset; Apply does not read it.
	Offset int64
}

// Apply writes a batch of changelog records and sets the applied offset to
// nextOffset, the log offset just after the last record of the batch, in one
// Badger transaction: after a crash either all of it is there or none.
//
// Insert and UpdateAfter store Row under Key, with its SchemaID (see the
// package doc's value layout); Delete removes Key;
// UpdateBefore is skipped (the UpdateAfter that follows it carries the new
// row). Later entries for a key win over earlier ones.
//
// Apply only moves forward: a nextOffset at or below the current applied
// offset is refused with ErrStaleOffset, except for an empty batch, which is
// then a no-op. Callers replaying the log must therefore skip records below
// AppliedOffset themselves, and pass batches that start at or after it; an
// empty batch with a higher nextOffset just advances the offset (a record
// batch that changes no key).
//
// A batch larger than Badger's transaction limit (about 15% of
// Config.MemTableBytes) fails with ErrBatchTooLarge and writes nothing.
// Apply does not retain entries after it returns.
func (s *Store) Apply(entries []Change, nextOffset int64) error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if applied := s.appliedOffset.Load(); nextOffset <= applied {
		if len(entries) == 0 {
			return nil
		}
		return fmt.Errorf("%w: batch ends at offset %d, store already applied up to %d",
			ErrStaleOffset, nextOffset, applied)
	}
	for i, c := range entries {
		if err := checkChange(c); err != nil {
			return fmt.Errorf("%w: entry %d: %s", ErrInvalidChange, i, err)
		}
	}
	s.db.writeMu.RLock() // not while another store is dropped (DB.writeMu)
	defer s.db.writeMu.RUnlock()
	txn := s.db.bdb.NewTransaction(true)
	defer txn.Discard()
	// The transaction keeps the store keys and values until it commits:
	// lay them out in one buffer rather than allocate each.
	n := 0
	for _, c := range entries {
		n += len(s.rowKeyPrefix) + len(c.Key) + schemaIDBytes + len(c.Row)
	}
	buf := make([]byte, 0, n)
	for _, c := range entries {
		if c.Kind == record.UpdateBefore {
			continue
		}
		start := len(buf)
		buf = s.appendRowKey(buf, c.Key)
		key := buf[start:len(buf):len(buf)]
		var err error
		if c.Kind == record.Delete {
			err = txn.Delete(key)
		} else {
			value := buf[len(buf):len(buf)]
			e := rowEntry(key, c.SchemaID, c.Row, &value)
			buf = buf[:len(buf)+len(value)]
			err = txn.SetEntry(e)
		}
		if err != nil {
			return wrapWriteErr(err)
		}
	}
	var off [8]byte
	binary.BigEndian.PutUint64(off[:], uint64(nextOffset))
	if err := txn.Set(s.appliedKey, off[:]); err != nil {
		return wrapWriteErr(err)
	}
	if err := txn.Commit(); err != nil {
		return wrapWriteErr(err)
	}
	// Refresh the cache before publishing the offset: whoever waits for it
	// to pass this batch must not find an older row there.
	s.refreshCache(entries)
	s.appliedOffset.Store(nextOffset)
	return nil
}

// refreshCache gives cached keys of committed entries their new rows (or
// drops them), in entry order, so the last entry of a key wins; with
// CacheWrites on it caches the rows of keys that were not cached too. It counts
// the commit first, so a read that began before it cannot put an old row
// back (see fill).
func (s *Store) refreshCache(entries []Change) {
	if s.cache == nil || len(entries) == 0 {
		return
	}
	s.commits.Add(1)
	// A read that cached a row set filled before it checked commits under
	// the shard's lock (see fill). So either that check saw this commit
	// and cached nothing, or filled is visible here and the row is
	// refreshed below.
	if !s.filled.Load() {
		return
	}
	all := s.cacheWrites.Load()
	var k, v []byte
	for _, c := range entries {
		k = cacheKey(k, s.cacheID, c.Key)
		switch c.Kind {
		case record.Insert, record.UpdateAfter:
			v = appendValue(v[:0], c.SchemaID, c.Row)
			s.cache.update(k, v, all)
		case record.Delete:
			s.cache.remove(k)
		}
	}
}

func checkChange(c Change) error {
	if len(c.Key) == 0 {
		return errors.New("empty key")
	}
	switch c.Kind {
	case record.Insert, record.UpdateAfter:
		if len(c.Row) == 0 {
			return fmt.Errorf("%s without a row", c.Kind)
		}
	case record.UpdateBefore, record.Delete:
	default:
		return fmt.Errorf("change type %s in a changelog", c.Kind)
	}
	return nil
}

func wrapWriteErr(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %w", ErrBatchTooLarge, err)
	}
	return pkgerr.Errorf("kvstore", "apply: %w", err)
}
