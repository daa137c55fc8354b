package kvstore

import (
	"encoding/binary"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// LegacySchemaID is the schema id reads give a row stored without one: a
// row written by a build before ALTER TABLE, when every table had one
// schema version, so it is of the table's first version.
const LegacySchemaID int16 = -1

// versionedRow marks, in a row entry's Badger UserMeta, a value that
// starts with the row's schema id; a row entry without it is a legacy row
// (LegacySchemaID).
const versionedRow byte = 1

// schemaIDBytes is the size of the schema id before a versioned row: an
// int16, big-endian, as a record batch carries it.
const schemaIDBytes = 2

// Row is a stored row and the schema version it was written in. Data is
// nil for an absent (or, in a Buffer, deleted) row.
type Row struct {
	SchemaID int16
	Data     []byte
}

// appendValue appends the versioned value of a row of schema id to dst:
// the id, then the row. The row cache keeps every row so, legacy ones
// (LegacySchemaID) too.
func appendValue(dst []byte, id int16, row []byte) []byte {
	return append(binary.BigEndian.AppendUint16(dst, uint16(id)), row...)
}

// splitValue reads a versioned value.
func splitValue(v []byte) (int16, []byte, error) {
	if len(v) <= schemaIDBytes { // stored rows are never empty
		return 0, nil, fmt.Errorf("%w: a versioned row of %d bytes", ErrCorrupt, len(v))
	}
	return int16(binary.BigEndian.Uint16(v)), v[schemaIDBytes:], nil
}

// decodeValue reads the value v of a row entry whose UserMeta is meta.
func decodeValue(meta byte, v []byte) (int16, []byte, error) {
	if meta&versionedRow == 0 {
		return LegacySchemaID, v, nil
	}
	return splitValue(v)
}

// rowEntry is the Badger entry of a row of schema id under key (valid
// until value's bytes change): versioned, but a LegacySchemaID row (a
// snapshot's, restored) is stored as it was, without an id.
func rowEntry(key []byte, id int16, row []byte, value *[]byte) *badger.Entry {
	if id == LegacySchemaID {
		return badger.NewEntry(key, row)
	}
	*value = appendValue((*value)[:0], id, row)
	return badger.NewEntry(key, *value).WithMeta(versionedRow)
}

// itemRow calls fn with the row of a row entry and its schema id, valid
// only during the call.
func itemRow(item *badger.Item, fn func(id int16, row []byte) error) error {
	meta := item.UserMeta()
	var fnErr error
	if err := item.Value(func(v []byte) error {
		id, row, err := decodeValue(meta, v)
		if err != nil {
			return err
		}
		fnErr = fn(id, row)
		return nil
	}); err != nil {
		return err
	}
	return fnErr
}
