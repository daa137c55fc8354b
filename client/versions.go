package client

import (
	"context"
	"fmt"
	"math"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// maxSchemaRefreshes bounds the metadata reloads one row of an unknown
// schema version causes before the read fails.
const maxSchemaRefreshes = 3

// setVersions records a table record's schema versions.
func (t *Table) setVersions(rec *pb.TableRecord) {
	versions := make(map[int16]record.Schema, len(rec.GetSchemas()))
	for _, v := range rec.GetSchemas() {
		s, id, err := schemaOf(&pb.TableRecord{Schemas: []*pb.SchemaVersion{v}, PrimaryKey: rec.GetPrimaryKey()})
		if err != nil {
			continue // a version this build cannot read: its rows fail to convert
		}
		versions[id] = s
	}
	t.mu.Lock()
	t.versions = versions
	t.mu.Unlock()
}

// schemaVersion returns schema version id, if known.
func (t *Table) schemaVersion(id int16) (record.Schema, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.versions[id]
	return s, ok
}

// rowConverter brings rows of other schema versions to a handle's schema
// for one scanner; not safe for concurrent use.
type rowConverter struct {
	buf []byte
}

// convert returns row, written under schema version id, as a row of the
// handle's schema (row itself when id is the handle's). A version the
// handle does not know (an ALTER since it was made) makes it reload the
// table's metadata, a few times at most, rather than misread the row.
// The result is valid until the next call.
func (c *rowConverter) convert(ctx context.Context, t *Table, id int16, row []byte) ([]byte, error) {
	if id == t.schemaID {
		return row, nil
	}
	from, err := t.knownVersion(ctx, id)
	if err != nil {
		return nil, err
	}
	out, err := record.ConvertRow(from, t.schema, row, c.buf[:0])
	if err != nil {
		return nil, fmt.Errorf("client: table %s: schema version %d to %d: %w", t.qualifiedName(), id, t.schemaID, err)
	}
	c.buf = out
	return out, nil
}

// readRow returns a row a server answered in schema version id (a
// lookup's, a row scan's: the leader's current version, which the answer
// names) as a row of the handle's schema, checked. A version the handle
// does not know (an ALTER since it was made) makes it reload the table's
// metadata, a few times at most (knownVersion). Id 0 comes from a server
// of a build before ALTER TABLE, when a table had one version: the
// handle's.
func (t *Table) readRow(ctx context.Context, id int32, row []byte) ([]byte, error) {
	if id == 0 || id == int32(t.schemaID) {
		if err := record.ValidateRow(t.schema, row); err != nil {
			return nil, err
		}
		return row, nil
	}
	if id < math.MinInt16 || id > math.MaxInt16 {
		return nil, fmt.Errorf("client: table %s: an answer in schema version %d, past any a table has", t.qualifiedName(), id)
	}
	from, err := t.knownVersion(ctx, int16(id))
	if err != nil {
		return nil, err
	}
	if err := record.ValidateRow(from, row); err != nil {
		return nil, fmt.Errorf("client: table %s: a row of schema version %d: %w", t.qualifiedName(), id, err)
	}
	return record.ConvertRow(from, t.schema, row, nil)
}
