package kvreplica

import (
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Schema versions of a primary-key table (ALTER TABLE ADD COLUMN). Writes
// of an older version are brought to the current one before they merge,
// so the changelogs written since hold current rows. Rows stored before
// an ALTER are not rewritten: the store does not say a row's version, and
// the rows read from it (to merge, and for lookups and scans) are told
// apart by their layout (record.RowVersion) and brought to the current
// version too. Changelog batches carry their version, whose key layout
// the replay reads them with.

// versionOf returns schema version id of the table and its keys.
func (t *table) versionOf(id int16) (record.Schema, *kvstore.Keys, bool) {
	for i := len(t.versions) - 1; i >= 0; i-- {
		if t.versions[i].ID == int32(id) {
			return t.versions[i].Schema, t.versionKeys[i], true
		}
	}
	return record.Schema{}, nil, false
}

// keysOf are the keys of the rows of a batch: those of its schema version
// (an old version may have a narrower null bitmap, which moves every
// slot), else the current ones.
func (t *table) keysOf(b record.Batch) *kvstore.Keys {
	if _, keys, ok := t.versionOf(b.SchemaID()); ok {
		return keys
	}
	return t.keys
}

// altered says the table has more than one schema version.
func (t *table) altered() bool { return len(t.versions) > 1 }

// currentRow returns a stored row (of any version) as a row of the
// current schema; the row itself when the table was never altered or the
// row is current. nil stays nil.
func (t *table) currentRow(row []byte) ([]byte, error) {
	if row == nil || !t.altered() {
		return row, nil
	}
	schemas := make([]record.Schema, len(t.versions))
	for i, v := range t.versions {
		schemas[i] = v.Schema
	}
	i, err := record.RowVersion(schemas, row)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "table %s: stored row: %v", t.name, err)
	}
	if i == len(schemas)-1 {
		return row, nil
	}
	return record.UpgradeRow(schemas[i], t.schema, row, nil)
}

// currentPacked is currentRow over rows packed end to end with their
// sizes (0: no row; stored rows are never empty), as lookups and scans
// answer them.
func (t *table) currentPacked(data []byte, sizes []uint32) ([]byte, []uint32, error) {
	if !t.altered() {
		return data, sizes, nil
	}
	out := make([]byte, 0, len(data))
	outSizes := make([]uint32, len(sizes))
	at := 0
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		row, err := t.currentRow(data[at : at+int(n)])
		if err != nil {
			return nil, nil, err
		}
		at += int(n)
		out = append(out, row...)
		outSizes[i] = uint32(len(row))
	}
	return out, outSizes, nil
}

// newVersions reads a table's schema versions and their keys.
func newVersions(t *table, versions []replica.SchemaVersion, bucketKey []string) error {
	t.versions = versions
	t.versionKeys = make([]*kvstore.Keys, len(versions))
	for i, v := range versions {
		keys, err := kvstore.NewKeys(v.Schema, bucketKey)
		if err != nil {
			return err
		}
		t.versionKeys[i] = keys
	}
	return nil
}
