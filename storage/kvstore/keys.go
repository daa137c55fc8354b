package kvstore

import (
	"fmt"
	"slices"

	"github.com/floedb/floe/storage/record"
)

// Limits of what a primary-key table stores.
const (
	// MaxKeyBytes bounds the encoded primary key of a row.
	MaxKeyBytes = 4 << 10
	// MaxRowBytes bounds one stored row.
	MaxRowBytes = 1 << 20
)

// Keys derives the store keys of a table's rows. A store key is the
// primary key in record.KeyEncoder form, preceded by the bucket key in the
// same form when the bucket key is a strict prefix of the primary key: rows
// sharing a bucket key are then adjacent in the store, and PrefixScan of
// the bucket-key bytes finds them. The encodings are prefix-free (a row's
// fixed part fixes its length), so one bucket key's bytes are never a
// prefix of another's.
//
// Keys is immutable and safe for concurrent use.
type Keys struct {
	pk        *record.KeyEncoder // over the table schema
	keySchema record.Schema
	prefix    *record.KeyEncoder // over the key schema; nil without prefix layout
}

// NewKeys returns the key layout of schema s (which has a primary key) with
// bucket key bucketKey (nil or equal to the primary key: no prefix layout).
func NewKeys(s record.Schema, bucketKey []string) (*Keys, error) {
	if len(s.PrimaryKey) == 0 {
		return nil, fmt.Errorf("%w: schema has no primary key", ErrInvalidUpdate)
	}
	pk, err := record.NewKeyEncoder(s, s.PrimaryKey)
	if err != nil {
		return nil, err
	}
	k := &Keys{pk: pk, keySchema: pk.KeySchema()}
	if len(bucketKey) > 0 && len(bucketKey) < len(s.PrimaryKey) && slices.Equal(bucketKey, s.PrimaryKey[:len(bucketKey)]) {
		if k.prefix, err = record.NewKeyEncoder(k.keySchema, bucketKey); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// KeySchema is the schema of primary keys: the key columns, NOT NULL.
func (k *Keys) KeySchema() record.Schema { return k.keySchema }

// Prefixed reports whether store keys start with the bucket key, so
// PrefixScan by bucket key works.
func (k *Keys) Prefixed() bool { return k.prefix != nil }

// PrimaryKey appends the primary key of row, a valid row of the table, to
// dst; a null key column is an error matching record.ErrNullNotAllowed.
func (k *Keys) PrimaryKey(dst, row []byte) ([]byte, error) {
	return k.pk.AppendKey(dst, row)
}

// StoreKey appends the store key of primary key pk (a valid row of
// KeySchema) to dst.
func (k *Keys) StoreKey(dst, pk []byte) ([]byte, error) {
	if k.prefix != nil {
		var err error
		if dst, err = k.prefix.AppendKey(dst, pk); err != nil {
			return dst, err
		}
	}
	return append(dst, pk...), nil
}

// RowKey appends the store key of row, a valid row of the table, to dst.
func (k *Keys) RowKey(dst, row []byte) ([]byte, error) {
	if k.prefix == nil {
		return k.pk.AppendKey(dst, row)
	}
	pk, err := k.pk.AppendKey(nil, row)
	if err != nil {
		return dst, err
	}
	return k.StoreKey(dst, pk)
}

// BucketKeySchema is the schema of bucket keys under the prefix layout;
// the zero Schema without it.
func (k *Keys) BucketKeySchema() record.Schema {
	if k.prefix == nil {
		return record.Schema{}
	}
	return k.prefix.KeySchema()
}
