package metastate

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// Bounds of ALTER TABLE.
const (
	// MaxSchemaVersions bounds a table's schema versions: every one stays
	// in its record (old batches are read by it), which every node keeps
	// and every metadata image carries.
	MaxSchemaVersions = 1000
	// MaxCommentBytes bounds a table's comment.
	MaxCommentBytes = 4096
	// MaxTableRecordBytes bounds an altered table's record, whose schema
	// versions each list every column: a table grown one column at a time
	// reaches it before MaxSchemaVersions when it has many columns.
	MaxTableRecordBytes = 1 << 20
	// maxTableColumns is record.MaxColumns (this package does not import
	// storage): the most columns a schema version may have.
	maxTableColumns = 4096
)

// alterTable applies an AlterTable: the properties, columns and comment of
// one table change together or not at all. Every check reads only the
// command and the stored table, so each replica refuses the same command
// with the same error.
func (a *applier) alterTable(c *pb.AlterTable) (*pb.CommandResult, error) {
	t, err := a.tableToAlter(c)
	if err != nil {
		return nil, err
	}
	qualified := t.GetDatabase() + "." + t.GetName()
	next := proto.CloneOf(t)
	if err := alterProperties(qualified, next, c); err != nil {
		return nil, err
	}
	if err := addColumns(qualified, next, c.GetAddColumns()); err != nil {
		return nil, err
	}
	if c.Comment != nil {
		if n := len(c.GetComment()); n > MaxCommentBytes {
			return nil, errorf(codeInvalidRequest, "table %q: comment of %d bytes; at most %d (MaxCommentBytes)", qualified, n, MaxCommentBytes)
		}
		next.Comment = c.GetComment()
	}
	if n := proto.Size(next); n > MaxTableRecordBytes {
		return nil, errorf(codeInvalidRequest, "table %q: its metadata would be %d bytes, over MaxTableRecordBytes (%d): "+
			"copy it into a new table to add columns", qualified, n, MaxTableRecordBytes)
	}
	if proto.Equal(next, t) {
		return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}, Unchanged: true}, nil
	}
	next.AlteredAtMs = a.appendedAtMs
	if err := a.putTable(next); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: next}}, nil
}

// tableToAlter finds the table an AlterTable names and checks its fences:
// the table id and schema version the caller saw, when it says.
func (a *applier) tableToAlter(c *pb.AlterTable) (*pb.TableRecord, error) {
	db, err := getDatabase(a.tx, c.GetDatabase())
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errorf(codeUnknownDatabase, "database %.256q does not exist", c.GetDatabase())
	}
	t, err := getTable(a.tx, db.GetId(), c.GetName())
	if err != nil {
		return nil, err
	}
	qualified := db.GetName() + "." + c.GetName()
	if t == nil {
		return nil, errorf(codeUnknownTable, "table %.256q does not exist", qualified)
	}
	schemas := t.GetSchemas()
	if len(schemas) == 0 {
		return nil, errorf(codeInvalidRequest, "table %q has no schema", qualified)
	}
	current := schemas[len(schemas)-1].GetId()
	switch {
	case c.GetTableId() != 0 && c.GetTableId() != t.GetId():
		return nil, errorf(codeFenced, "table %q has id %d, not %d: it was dropped and created again since the caller read it",
			qualified, t.GetId(), c.GetTableId())
	case c.GetExpectedSchemaId() != 0 && c.GetExpectedSchemaId() != current:
		return nil, errorf(codeFenced, "table %q is at schema version %d, not the expected %d: read it again and retry",
			qualified, current, c.GetExpectedSchemaId())
	}
	return t, nil
}

// alterProperties sets and resets the properties of t as c asks: each
// named property must be known to c's checks version, apply to the table's
// kind and be mutable (tableprop.Property.Mutable), and the set values
// must parse; the resulting properties must still be readable.
func alterProperties(table string, t *pb.TableRecord, c *pb.AlterTable) error {
	set, reset := c.GetSetProperties(), c.GetResetProperties()
	if len(set) == 0 && len(reset) == 0 {
		return nil
	}
	if n := len(set) + len(reset); n > MaxProperties {
		return errorf(codeInvalidRequest, "table %q: %d properties to set or reset; at most %d", table, n, MaxProperties)
	}
	// AlterTable came with ChecksLogFormat: no command of it is older.
	checks := min(max(c.GetChecks(), tableprop.ChecksLogFormat), tableprop.LatestChecks)
	pk := len(t.GetPrimaryKey()) > 0
	names := slices.Sorted(maps.Keys(set))
	names = append(names, slices.Sorted(slices.Values(reset))...)
	for i, k := range names { // set ones first, each part sorted: the first bad name is the same on every replica
		if err := alterableProperty(table, k, set[k], pk, checks); err != nil {
			return err
		}
		if i >= len(set) {
			if _, both := set[k]; both || slices.Contains(names[len(set):i], k) {
				return errorf(codeInvalidRequest, "table %q: property %q is both set and reset, or reset twice", table, k)
			}
		}
	}
	tbl := tableprop.Table{Replication: int(t.GetReplication()), PrimaryKey: pk, Partitioned: len(t.GetPartitionKeys()) > 0,
		Checks: checks, CreatedChecks: t.GetChecks()}
	if _, err := tableprop.Parse(set, tbl); err != nil {
		return errorf(codeInvalidRequest, "table %q: %v", table, err)
	}
	props := maps.Clone(t.GetProperties())
	if props == nil {
		props = map[string]string{}
	}
	maps.Copy(props, set)
	for _, k := range reset {
		delete(props, k)
	}
	if len(props) > MaxProperties {
		return errorf(codeInvalidRequest, "table %q would have %d properties; at most %d", table, len(props), MaxProperties)
	}
	if _, err := tableprop.ParseStored(props, tbl); err != nil {
		return errorf(codeInvalidRequest, "table %q: %v", table, err)
	}
	if len(props) == 0 {
		props = nil // as a table created without properties stores them
	}
	t.Properties = props
	return nil
}

// alterableProperty checks that ALTER TABLE may set (value) or reset
// property k of a table: within the size bounds, not one of table
// create's settings that are no properties, known to the checks version,
// of the table's kind, and mutable.
func alterableProperty(table, k, value string, pk bool, checks uint32) error {
	if len(k) > MaxPropertyKeyBytes || len(value) > MaxPropertyValueBytes {
		return errorf(codeInvalidRequest, "table %q: property %.64q is over %d bytes or its value over %d",
			table, k, MaxPropertyKeyBytes, MaxPropertyValueBytes)
	}
	if why, ok := tableprop.NotProperties[k]; ok {
		return errorf(codeInvalidRequest, "table %q: %q cannot change: %s", table, k, why)
	}
	p, ok := tableprop.Lookup(k, checks)
	switch {
	case !ok:
		return errorf(codeInvalidRequest, "table %q: property %.64q: unknown property; valid properties: %s", table, k, tableprop.Valid())
	case p.PrimaryKeyOnly && !pk:
		return errorf(codeInvalidRequest, "table %q: property %q applies to primary-key tables only", table, k)
	case !p.Mutable:
		return errorf(codeInvalidRequest, "table %q: property %q is immutable: %s", table, k, p.Immutable)
	}
	return nil
}

// addColumns appends cols, nullable and named anew, to t's current schema
// as a new schema version (the current id + 1). Rows stored before it stay
// as they are: readers take them as having null in the new columns.
func addColumns(table string, t *pb.TableRecord, cols []*pb.Column) error {
	if len(cols) == 0 {
		return nil
	}
	schemas := t.GetSchemas()
	if len(schemas) >= MaxSchemaVersions {
		return errorf(codeInvalidRequest, "table %q has %d schema versions, the most a table may have (MaxSchemaVersions %d): "+
			"copy it into a new table to add columns", table, len(schemas), MaxSchemaVersions)
	}
	cur := schemas[len(schemas)-1]
	if n := len(cur.GetColumns()) + len(cols); n > maxTableColumns {
		return errorf(codeInvalidRequest, "table %q would have %d columns; at most %d", table, n, maxTableColumns)
	}
	columns := make([]*pb.Column, 0, len(cur.GetColumns())+len(cols))
	for _, col := range cur.GetColumns() {
		columns = append(columns, proto.CloneOf(col))
	}
	for _, col := range cols {
		name := col.GetName()
		switch {
		case !validName(name):
			return errorf(codeInvalidRequest, "table %q: invalid column name %.256q: %s", table, name, nameRule)
		case strings.HasPrefix(name, ReservedColumnPrefix):
			return errorf(codeInvalidRequest,
				"table %q: column %q: names starting with %q are reserved for the fields consume adds (_bucket, _offset, _timestamp, _change)",
				table, name, ReservedColumnPrefix)
		case slices.ContainsFunc(columns, func(c *pb.Column) bool { return strings.EqualFold(c.GetName(), name) }):
			return errorf(codeInvalidRequest, "table %q: column %q exists already (names are compared without case)", table, name)
		case col.GetType() == "":
			return errorf(codeInvalidRequest, "table %q: column %q has no type", table, name)
		case !col.GetNullable():
			return errorf(codeInvalidRequest, "table %q: column %q is NOT NULL: an added column must be nullable, "+
				"since the rows stored before it have no value for it", table, name)
		}
		columns = append(columns, &pb.Column{Name: name, Type: col.GetType(), Nullable: true})
	}
	t.Schemas = append(t.Schemas, &pb.SchemaVersion{Id: cur.GetId() + 1, Columns: columns})
	return nil
}
