package client

import (
	"context"
	"fmt"
	"slices"

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

// readRow returns a row a server answered in the table's current schema
// (a lookup's, a row scan's) as a row of the handle's schema, checked.
// The server's current version may be newer than the handle's: the row's
// version is told by its layout (record.RowVersion) among the versions
// known, which a row of none of them makes the handle reload, a few times
// at most.
func (t *Table) readRow(ctx context.Context, row []byte) ([]byte, error) {
	t.mu.RLock()
	altered := len(t.versions) > 1
	t.mu.RUnlock()
	if err := record.ValidateRow(t.schema, row); err == nil && !altered {
		return row, nil
	}
	for tries := 0; ; tries++ {
		schemas := t.knownSchemas()
		i, err := record.RowVersion(schemas, row)
		if err == nil {
			return record.ConvertRow(schemas[i], t.schema, row, nil)
		}
		if tries == maxSchemaRefreshes {
			return nil, err
		}
		if err := t.Refresh(ctx); err != nil {
			return nil, err
		}
	}
}

// knownSchemas are the schema versions known, oldest first.
func (t *Table) knownSchemas() []record.Schema {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ids := make([]int, 0, len(t.versions))
	for id := range t.versions {
		ids = append(ids, int(id))
	}
	slices.Sort(ids)
	out := make([]record.Schema, len(ids))
	for i, id := range ids {
		out[i] = t.versions[int16(id)]
	}
	return out
}
