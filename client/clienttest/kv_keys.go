package clienttest

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spaolacci/murmur3"

	"github.com/floedb/floe/storage/record"
)

// kvKeys is what the stand-in knows of a primary-key table's keys.
type kvKeys struct {
	schema    record.Schema
	primary   *record.KeyEncoder // table rows → primary keys
	keySchema record.Schema
	bucket    *record.KeyEncoder // table rows → bucket keys
	bucketKey record.Schema
	keyBucket *record.KeyEncoder // primary keys → bucket keys
	isKey     []bool
	// prefix: the bucket key is a strict prefix of the primary key.
	prefix bool
}

func newKVKeys(s record.Schema, bucketKey []string) (*kvKeys, error) {
	k := &kvKeys{schema: s, isKey: make([]bool, len(s.Columns))}
	var err error
	if k.primary, err = record.NewKeyEncoder(s, s.PrimaryKey); err != nil {
		return nil, err
	}
	k.keySchema = k.primary.KeySchema()
	for _, name := range bucketKey {
		if !slices.Contains(s.PrimaryKey, name) {
			return nil, fmt.Errorf("bucket key column %q is not in the primary key", name)
		}
	}
	if k.bucket, err = record.NewKeyEncoder(s, bucketKey); err != nil {
		return nil, err
	}
	k.bucketKey = k.bucket.KeySchema()
	if k.keyBucket, err = record.NewKeyEncoder(k.keySchema, bucketKey); err != nil {
		return nil, err
	}
	for _, name := range s.PrimaryKey {
		i, _ := s.ColumnIndex(name)
		k.isKey[i] = true
	}
	k.prefix = len(bucketKey) < len(s.PrimaryKey) && slices.Equal(bucketKey, s.PrimaryKey[:len(bucketKey)])
	return k, nil
}

// bucketOf hashes bucket-key bytes as clients do.
func bucketOf(key []byte, buckets int) int32 {
	h := murmur3.New32()
	_, _ = h.Write(key)
	return int32(h.Sum32() % uint32(buckets))
}

// relaxed returns s with the columns for which loosen says so nullable.
func (k *kvKeys) relaxed(loosen func(i int) bool) record.Schema {
	out := record.Schema{Columns: slices.Clone(k.schema.Columns)}
	for i := range out.Columns {
		if loosen(i) {
			out.Columns[i].Nullable = true
		}
	}
	return out
}

// merge returns the row of a partial update: old (nil when the key is
// new) with the target columns taken from update, a row valid under the
// relaxed schema loose. The result must be a valid row of the table.
func (k *kvKeys) merge(old, update []byte, loose record.Schema, targets []bool) ([]byte, error) {
	fields := make(map[string]json.RawMessage)
	if old != nil {
		js, err := record.AppendRowJSON(nil, k.schema, old)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(js, &fields); err != nil {
			return nil, err
		}
	}
	js, err := record.AppendRowJSON(nil, loose, update)
	if err != nil {
		return nil, err
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(js, &set); err != nil {
		return nil, err
	}
	for i, col := range k.schema.Columns {
		if targets[i] {
			fields[col.Name] = set[col.Name]
		}
	}
	merged, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return record.AppendRowFromJSON(nil, k.schema, merged)
}
