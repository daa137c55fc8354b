package client

import (
	"fmt"
	"slices"

	"github.com/floedb/floe/storage/record"
)

// tableKeys is what a primary-key table's handle knows of its keys.
type tableKeys struct {
	primary    *record.KeyEncoder // rows of the table → primary keys
	keySchema  record.Schema      // of primary keys
	keyBucket  *record.KeyEncoder // primary keys → bucket keys
	bucketKeys record.Schema      // of bucket keys
	// prefix: the bucket key is the first columns of the primary key and
	// not all of them, so PrefixLookup serves it.
	prefix bool
}

// newTableKeys prepares the keys of schema s (with a primary key) whose
// bucket key is bucketKey, a subset of the primary key.
func newTableKeys(s record.Schema, bucketKey []string) (*tableKeys, error) {
	primary, err := record.NewKeyEncoder(s, s.PrimaryKey)
	if err != nil {
		return nil, fmt.Errorf("primary key: %w", err)
	}
	k := &tableKeys{primary: primary, keySchema: primary.KeySchema()}
	for _, name := range bucketKey {
		if !slices.Contains(s.PrimaryKey, name) {
			return nil, fmt.Errorf("bucket key column %q is not in the primary key", name)
		}
	}
	// The row format is canonical: the bucket key of a primary key row is
	// the same bytes as the bucket key of the full row.
	if k.keyBucket, err = record.NewKeyEncoder(k.keySchema, bucketKey); err != nil {
		return nil, fmt.Errorf("bucket key: %w", err)
	}
	k.bucketKeys = k.keyBucket.KeySchema()
	k.prefix = len(bucketKey) < len(s.PrimaryKey) && slices.Equal(bucketKey, s.PrimaryKey[:len(bucketKey)])
	return k, nil
}

// requireKeys returns the table's keys, or ErrNotPrimaryKeyTable.
func (t *Table) requireKeys() (*tableKeys, error) {
	if t.keys == nil {
		return nil, fmt.Errorf("%w: %s.%s", ErrNotPrimaryKeyTable, t.info.Database, t.info.Name)
	}
	return t.keys, nil
}

// PrimaryKeySchema is the schema of the table's primary keys, as Lookup
// takes them: the primary-key columns in key order, NOT NULL. A log table
// has none: the zero Schema.
func (t *Table) PrimaryKeySchema() record.Schema {
	if t.keys == nil {
		return record.Schema{}
	}
	return record.Schema{Columns: slices.Clone(t.keys.keySchema.Columns)}
}

// BucketKeySchema is the schema of the table's bucket keys, as
// PrefixLookup takes them: the bucket-key columns in key order, NOT NULL.
// A table without a bucket key has none: the zero Schema.
func (t *Table) BucketKeySchema() record.Schema {
	switch {
	case t.keys != nil:
		return record.Schema{Columns: slices.Clone(t.keys.bucketKeys.Columns)}
	case t.bucketKey != nil:
		return t.bucketKey.KeySchema()
	}
	return record.Schema{}
}

// PrimaryKeyOf appends the primary key of a valid row of the table's schema
// (only its key columns are read) to dst.
func (t *Table) PrimaryKeyOf(dst, row []byte) ([]byte, error) {
	k, err := t.requireKeys()
	if err != nil {
		return dst, err
	}
	return k.primary.AppendKey(dst, row)
}
