package kvreplica

import (
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Schema versions of a primary-key table (ALTER TABLE ADD COLUMN). Writes
// of an older version are brought to the current one before they merge,
// so the changelogs written since hold current rows. Rows stored before
// an ALTER are not rewritten: the store keeps every row's schema version
// (kvstore's value layout), and the rows read from it (to merge, and for
// lookups and scans) are brought to the current version. Changelog
// batches carry their version, whose key layout the replay reads them
// with and which the store keeps with their rows; a batch of a version this
// node's metadata lacks yet waits for it (errVersionAhead).

// versionOf returns schema version id of the table and its keys; a legacy
// row's (kvstore.LegacySchemaID) is the first version, the only one the
// builds that stored such rows had.
func (t *table) versionOf(id int16) (record.Schema, *kvstore.Keys, bool) {
	if id == kvstore.LegacySchemaID {
		return t.versions[0].Schema, t.versionKeys[0], true
	}
	for i := len(t.versions) - 1; i >= 0; i-- {
		if t.versions[i].ID == int32(id) {
			return t.versions[i].Schema, t.versionKeys[i], true
		}
	}
	return record.Schema{}, nil, false
}

// errVersionAhead: a changelog batch of a schema version this node's
// metadata does not have yet (the leader that wrote it learned of the ALTER
// first). Its rows wait: the current version's keys could misread them.
var errVersionAhead = pkgerr.New("kvreplica", "changelog of a schema version unknown here yet")

// keysOf are the keys of the rows of a batch: those of its schema version
// (an old version may have a narrower null bitmap, which moves every
// slot). A control batch has no rows: the current keys.
func (t *table) keysOf(b record.Batch) (*kvstore.Keys, error) {
	if b.PayloadFormat() == record.PayloadControl {
		return t.keys, nil
	}
	if _, keys, ok := t.versionOf(b.SchemaID()); ok {
		return keys, nil
	}
	return nil, fmt.Errorf("%w: batch at offset %d of schema version %d, table %s", errVersionAhead, b.BaseOffset(), b.SchemaID(), t.name)
}

// currentID is the id of the table's current schema version.
func (t *table) currentID() int16 { return int16(t.versions[len(t.versions)-1].ID) }

// isCurrent says rows of schema version id are of the current version.
func (t *table) isCurrent(id int16) bool {
	cur := t.versions[len(t.versions)-1].ID
	return int32(id) == cur || (id == kvstore.LegacySchemaID && t.versions[0].ID == cur)
}

// currentRow returns a stored row of schema version id as a row of the
// current schema: the row itself when it is current (or absent), else
// upgraded, appended to dst. A version this node does not know (its
// metadata behind the writer's) is a retriable UNAVAILABLE.
func (t *table) currentRow(id int16, row, dst []byte) ([]byte, error) {
	cur := t.currentID()
	if row == nil || t.isCurrent(id) {
		return row, nil
	}
	from, _, ok := t.versionOf(id)
	if !ok {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
			"table %s: a stored row of schema version %d, which this node's metadata (at version %d) lacks yet", t.name, id, cur)
	}
	out, err := record.UpgradeRow(from, t.schema, row, dst)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "table %s: stored row of schema version %d: %v", t.name, id, err)
	}
	return out, nil
}

// currentPacked is currentRow over packed rows, as lookups and scans
// answer them; the rows themselves when they are all current.
func (t *table) currentPacked(data []byte, sizes []uint32, ids []int16) ([]byte, []uint32, error) {
	upgrade := false
	for i, n := range sizes {
		if n > 0 && !t.isCurrent(ids[i]) {
			upgrade = true
			break
		}
	}
	if !upgrade {
		return data, sizes, nil
	}
	out := make([]byte, 0, len(data)+len(data)/4)
	outSizes := make([]uint32, len(sizes))
	at := 0
	for i, n := range sizes {
		if n == 0 {
			continue
		}
		start := len(out)
		var err error
		row := data[at : at+int(n)]
		if t.isCurrent(ids[i]) {
			out = append(out, row...)
		} else if out, err = t.currentRow(ids[i], row, out); err != nil {
			return nil, nil, err
		}
		at += int(n)
		outSizes[i] = uint32(len(out) - start)
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
