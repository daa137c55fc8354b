package kvstore

import (
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// Loader bulk-loads rows into an empty store: a KV snapshot's restore.
// Rows go in through one Badger write batch; the store's applied offset
// stays 0 until Finish sets it, so a load cut short (a crash, a failed
// read) leaves a store that says it holds nothing applied, which the
// caller empties before loading again.
type Loader struct {
	s    *Store
	wb   *badger.WriteBatch
	rows int
}

// NewLoader starts a load into s, which must have applied nothing.
func (s *Store) NewLoader() (*Loader, error) {
	applied, err := s.AppliedOffset()
	if err != nil {
		return nil, err
	}
	if applied != 0 {
		return nil, pkgerr.Errorf("kvstore", "load into store %s, which applied up to %d: drop it first", s.id, applied)
	}
	return &Loader{s: s, wb: s.db.bdb.NewWriteBatch()}, nil
}

// Put adds a row of schema version schemaID under its primary key; a
// LegacySchemaID row is stored as earlier builds stored it, without an id.
func (l *Loader) Put(key []byte, schemaID int16, row []byte) error {
	var value []byte // rowEntry's copy of a versioned row
	e := rowEntry(l.s.appendRowKey(nil, key), schemaID, row, &value)
	if schemaID == LegacySchemaID {
		e.Value = slices.Clone(row)
	}
	if err := l.wb.SetEntry(e); err != nil {
		return pkgerr.Errorf("kvstore", "load %s: %w", l.s.id, err)
	}
	l.rows++
	return nil
}

// Finish writes what is left and sets the applied offset the rows cover.
func (l *Loader) Finish(appliedOffset int64) (rows int, err error) {
	if err := l.wb.Flush(); err != nil {
		return 0, pkgerr.Errorf("kvstore", "load %s: %w", l.s.id, err)
	}
	if appliedOffset > 0 {
		if err := l.s.Apply(nil, appliedOffset); err != nil {
			return 0, err
		}
	}
	return l.rows, nil
}

// Cancel drops what was not flushed yet; the store keeps what was.
func (l *Loader) Cancel() { l.wb.Cancel() }
