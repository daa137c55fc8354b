package client

import (
	"context"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// AlterTable is what Admin.AlterTable changes; the zero value changes
// nothing. The changes apply together or not at all.
type AlterTable struct {
	// Set gives mutable properties new values (docs/tables.md lists which
	// are mutable); an immutable one is refused with the reason.
	Set map[string]string
	// Reset takes properties back to their default.
	Reset []string
	// AddColumns are added at the end, in order, as a new schema version;
	// each must be nullable. Rows stored before read as null in them.
	AddColumns []record.Column
	// Comment, when not nil, replaces the table's comment ("" clears it).
	Comment *string
	// ExpectedSchemaID, when not 0, makes the change apply only to the
	// table at that schema version (TableInfo.SchemaID): an ALTER written
	// against a schema another one changed since is refused with
	// transport.ErrFenced.
	ExpectedSchemaID int32
}

// AlterTable changes a table's properties, columns or comment, and returns
// the table after it. Live replicas apply the new properties without a
// restart. Writers and readers made before keep working: writers go on
// writing rows of their schema version, and readers see rows of newer
// versions as rows of theirs. Options: RequestID, Unchanged (set when the
// table already was as asked).
func (a *Admin) AlterTable(ctx context.Context, database, table string, alter AlterTable, opts ...Option) (*TableInfo, error) {
	o := collect(opts)
	req := &pb.AlterTableRequest{RequestId: o.id(), Database: database, Name: table, SetProperties: alter.Set,
		ResetProperties: alter.Reset, Comment: alter.Comment, ExpectedSchemaId: alter.ExpectedSchemaID}
	for _, c := range alter.AddColumns {
		col := c.Name + " " + c.Type.String()
		if !c.Nullable {
			col += " NOT NULL" // refused by the server, with the rule
		}
		req.AddColumns = append(req.AddColumns, col)
	}
	var resp *pb.CommandResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.AlterTable(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	o.report(resp)
	return tableFromPB(resp.GetResult().GetTable(), nil), nil
}

// LogFormat is the format of the table's new log batches, as its
// log.format property says: "arrow" or "row". An append writer writes
// the format the table had when the writer was made.
func (t *Table) LogFormat() string { return t.settings().LogFormat }

// logFormat is how a writer of a log table encodes its batches: Arrow
// payloads of the handle's schema, compressed as the table says.
type logFormat struct {
	schema record.Schema
	arrow  arrowlog.Options
	check  *arrowlog.RowChecker // nil: every valid row fits
}

// logFormat returns the log format new writers of the table use: nil for
// row batches.
func (t *Table) logFormat() (*logFormat, error) {
	v := t.settings()
	if v.LogFormat != tableprop.FormatArrow {
		return nil, nil
	}
	comp, err := record.ParseCompression(v.LogCompression)
	if err != nil {
		return nil, pkgerr.Errorf("client", "table %s: %s: %w", t.qualifiedName(), tableprop.LogCompression, err)
	}
	f := &logFormat{schema: t.schema, arrow: arrowlog.Options{Compression: comp}, check: arrowlog.NewRowChecker(t.schema)}
	if comp == record.CompressionZstd {
		f.arrow.Level = v.LogCompressionLevel
	}
	if err := f.arrow.Validate(); err != nil {
		return nil, pkgerr.Errorf("client", "table %s: %w", t.qualifiedName(), err)
	}
	return f, nil
}

// LogCompression is the table's log.compression: "zstd", "lz4" or "none".
func (t *Table) LogCompression() string { return t.settings().LogCompression }

// LogCompressionLevel is the table's log.compression.level, the zstd level
// (lz4 and none ignore it).
func (t *Table) LogCompressionLevel() int { return t.settings().LogCompressionLevel }

// settings are the table's properties as of the last load or refresh.
func (t *Table) settings() tableprop.Values {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.props
}

// setSettings reads a table record's properties; a table whose stored
// properties no node can read keeps the defaults here (its requests are
// refused with the reason).
func (t *Table) setSettings(rec *pb.TableRecord) {
	v, _ := tableprop.ParseStored(rec.GetProperties(), tableprop.Table{Replication: int(rec.GetReplication()),
		PrimaryKey: len(rec.GetPrimaryKey()) > 0, Partitioned: len(rec.GetPartitionKeys()) > 0, CreatedChecks: rec.GetChecks()})
	t.mu.Lock()
	t.props = v
	t.mu.Unlock()
}
