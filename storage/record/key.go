package record

import (
	"encoding/binary"
	"slices"
	"strconv"
)

// KeyEncoder turns rows into the bytes of their key: the values of the key
// columns, in key order, encoded as a row (row.go) of a schema holding just
// those columns, all NOT NULL. Bucket keys are hashed in this form
// (murmur3 of the key bytes, modulo the bucket count), and primary keys are
// stored in it.
//
// Because the row format is canonical, equal key values always give equal
// key bytes, whatever the other columns hold. A column keeps its type in the
// key, and a value's slot or payload is copied as it is: no value is decoded
// or re-encoded on the way.
//
// A KeyEncoder holds no state that changes: it is safe for concurrent use.
type KeyEncoder struct {
	rowColumns []Column // the columns of the row schema
	keySchema  Schema   // the key columns, NOT NULL, in key order
	indexes    []int    // key column i is column indexes[i] of the row
	fixed      []bool   // per key column: fixed-width type
}

// NewKeyEncoder returns an encoder of the key made of the named columns of
// s, in that order. s must validate; key must name one or more distinct
// columns of s, none of a nested type (ARRAY, MAP, ROW). Errors match
// ErrInvalidSchema.
func NewKeyEncoder(s Schema, key []string) (*KeyEncoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if len(key) == 0 {
		return nil, newSchemaError("key: no columns")
	}
	k := &KeyEncoder{
		rowColumns: slices.Clone(s.Columns),
		indexes:    make([]int, len(key)),
		fixed:      make([]bool, len(key)),
	}
	for i, name := range key {
		ci, ok := s.ColumnIndex(name)
		if !ok {
			return nil, newSchemaError("key: unknown column " + strconv.Quote(name))
		}
		if slices.Index(key, name) != i {
			return nil, newSchemaError("key: duplicate column " + strconv.Quote(name))
		}
		col := s.Columns[ci]
		if col.Type.IsNested() {
			return nil, newSchemaError("key: " + columnRef(ci, name) + ": " + col.Type.String() + " cannot be part of a key")
		}
		col.Nullable = false
		k.keySchema.Columns = append(k.keySchema.Columns, col)
		k.indexes[i] = ci
		k.fixed[i] = col.Type.IsFixedWidth()
	}
	return k, nil
}

// KeySchema returns the schema of the key rows: the key columns in key
// order, NOT NULL. Rows that AppendKey writes validate under it.
func (k *KeyEncoder) KeySchema() Schema {
	return Schema{Columns: slices.Clone(k.keySchema.Columns)}
}

// AppendKey appends the key of row to dst. row must be a valid row of the
// encoder's schema (see ValidateRow); for any other bytes the key is
// unspecified, though AppendKey never panics. A key column that is null in
// the row is an error matching ErrNullNotAllowed, and dst is returned
// unchanged.
func (k *KeyEncoder) AppendKey(dst, row []byte) ([]byte, error) {
	view := RowView{columns: k.rowColumns, length: len(k.rowColumns), data: row}
	n := len(k.indexes)
	size := fixedEnd(n)
	for i, ci := range k.indexes {
		if view.IsNull(ci) {
			return dst, newColumnError(k.rowColumns[ci].Name, "null in a key column", ErrNullNotAllowed)
		}
		if !k.fixed[i] {
			if l := len(view.payload(ci)); l > maxInlinePayload {
				size += l
			}
		}
	}
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	key := dst[start:]
	clear(key[:fixedEnd(n)]) // the null bitmap stays zero: no key column is null
	slotsAt := bitmapBytes(n)
	varAt := fixedEnd(n)
	for i, ci := range k.indexes {
		slot := key[slotsAt+slotBytes*i : slotsAt+slotBytes*(i+1)]
		if k.fixed[i] {
			binary.LittleEndian.PutUint64(slot, view.slot(ci))
			continue
		}
		varAt = putPayload(key, slot, varAt, view.payload(ci))
	}
	return dst, nil
}
