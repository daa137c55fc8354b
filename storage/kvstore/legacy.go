package kvstore

import (
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// Earlier builds kept one Badger database per bucket replica, its keys
// without a store prefix: 'r' | primary key for rows, "mapplied_offset"
// for the applied offset.
var legacyAppliedKey = []byte("m" + appliedOffsetName)

// ImportLegacy moves a store kept in the layout of earlier builds (its own
// Badger database in dir) into s, then deletes dir, and returns how many
// rows it moved. s must be empty (applied offset 0): callers drop it first,
// so an import that a crash interrupted is done again from the start. The
// applied offset is written last, so until the import is complete s
// claims to hold nothing of the log.
func (s *Store) ImportLegacy(dir string) (int, error) {
	if applied, err := s.AppliedOffset(); err != nil {
		return 0, err
	} else if applied != 0 {
		return 0, pkgerr.Errorf("kvstore", "import into store %s, which applied up to %d: drop it first", s.id, applied)
	}
	old, err := badger.Open(badgerOptions(Config{Dir: dir, MemTableBytes: 8 << 20}.withDefaults()))
	if err != nil {
		return 0, pkgerr.Errorf("kvstore", "open earlier store %s: %w", dir, err)
	}
	closed := false
	defer func() {
		if !closed {
			old.Close()
		}
	}()
	var applied int64
	rows := 0
	wb := s.db.bdb.NewWriteBatch()
	defer wb.Cancel()
	err = old.View(func(txn *badger.Txn) error {
		if applied, err = readAppliedOffset(txn, legacyAppliedKey); err != nil {
			return err
		}
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{rowPrefix}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			row, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := wb.Set(s.appendRowKey(nil, item.Key()[1:]), row); err != nil {
				return err
			}
			rows++
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	}
	if err != nil {
		return 0, pkgerr.Errorf("kvstore", "import %s: %w", dir, err)
	}
	if applied > 0 {
		if err := s.Apply(nil, applied); err != nil {
			return 0, err
		}
	}
	closed = true
	if err := old.Close(); err != nil {
		return 0, pkgerr.Errorf("kvstore", "close earlier store %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return rows, pkgerr.Errorf("kvstore", "remove earlier store %s: %w", dir, err)
	}
	return rows, nil
}
