package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
)

// errStopRows ends batchRows early; it is not a failure.
var errStopRows = errors.New("client: stop reading the batch")

// projection is the columns a scanner reads (LogScannerOptions.Columns).
type projection struct {
	cols []int   // indexes into the handle's schema, in the order asked
	wire []int32 // the same, for FetchBucket.columns
	out  record.Schema
}

// newProjection resolves column names against the handle's schema; nil
// names (or none) read every column.
func newProjection(t *Table, names []string) (*projection, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cols, out, err := t.Columns(names)
	if err != nil {
		return nil, err
	}
	p := &projection{cols: cols, out: out}
	for _, c := range cols {
		p.wire = append(p.wire, int32(c))
	}
	return p, nil
}

// Columns resolves column names against the handle's schema: their
// indexes, in the order given, and the schema of rows of those columns
// (without a primary key), as record.ProjectRow cuts them. An unknown
// name, or one given twice, is an error naming the table's columns.
func (t *Table) Columns(names []string) ([]int, record.Schema, error) {
	cols := make([]int, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		i, ok := t.schema.ColumnIndex(name)
		if !ok {
			all := make([]string, len(t.schema.Columns))
			for j, c := range t.schema.Columns {
				all[j] = c.Name
			}
			return nil, record.Schema{}, pkgerr.Errorf("client", "table %s has no column %q (its columns: %s)", t.qualifiedName(), name, strings.Join(all, ", "))
		}
		if seen[name] {
			return nil, record.Schema{}, pkgerr.Errorf("client", "column %q is asked for twice", name)
		}
		seen[name] = true
		cols = append(cols, i)
	}
	return cols, arrowlog.SubSchema(t.schema, cols), nil
}

// indexes are the projection's columns for a fetch request; nil for all.
func (p *projection) indexes() []int32 {
	if p == nil {
		return nil
	}
	return p.wire
}

// Schema is the schema of the scanner's rows: the handle's, or the
// columns of LogScannerOptions.Columns (without a primary key).
func (s *LogScanner) Schema() record.Schema {
	if s.proj == nil {
		return s.t.Schema()
	}
	return record.Schema{Columns: slices.Clone(s.proj.out.Columns)}
}

// batchDecoders are a scanner's Arrow decoders, by schema version and
// whether they read projected batches.
type batchDecoders struct {
	m       map[decoderKey]*arrowlog.Decoder
	present []int // scratch: the projection's columns a version has
	mapping []int // scratch: for each projected column, its place in a cut batch, or -1
	buf     []byte
}

type decoderKey struct {
	schemaID  int16
	projected bool
}

func (d *batchDecoders) get(k decoderKey, s record.Schema) (*arrowlog.Decoder, error) {
	if dec, ok := d.m[k]; ok {
		return dec, nil
	}
	dec, err := arrowlog.NewDecoder(s)
	if err != nil {
		return nil, err
	}
	if d.m == nil {
		d.m = make(map[decoderKey]*arrowlog.Decoder)
	}
	d.m[k] = dec
	return dec, nil
}

// batchRows calls fn with every record of b (a batch of table data, its
// CRC checked) whose row is a row of the scanner's schema, in offset
// order, until fn returns an error (errStopRows: stop, no error). The
// record is valid while fn runs.
func (s *LogScanner) batchRows(ctx context.Context, b record.Batch, scratch *[]byte, fn func(record.Record) error) error {
	var err error
	if b.PayloadFormat() == record.PayloadArrow {
		err = s.arrowRows(ctx, b, fn)
	} else {
		err = s.rowRecords(ctx, b, scratch, fn)
	}
	if errors.Is(err, errStopRows) {
		return nil
	}
	return err
}

// rowRecords is batchRows for a batch of rows.
func (s *LogScanner) rowRecords(ctx context.Context, b record.Batch, scratch *[]byte, fn func(record.Record) error) error {
	recs, sc, err := b.Records(s.codec, *scratch)
	*scratch = sc
	if err != nil {
		return err
	}
	for recs.Next() {
		r := recs.Record()
		if r.Data, err = s.outRow(ctx, b.SchemaID(), r.Data); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return recs.Err()
}

// arrowRows is batchRows for an Arrow batch, whole or cut by the leader
// to the projection's columns its schema version has.
func (s *LogScanner) arrowRows(ctx context.Context, b record.Batch, fn func(record.Record) error) error {
	id := b.SchemaID()
	bs, err := s.t.knownVersion(ctx, id)
	if err != nil {
		return err
	}
	base := b.BaseOffset()
	// An Arrow batch is a log table's (+A), or, without the append-only
	// bit, a primary-key table's rows read from its lake: each a +I.
	change := record.AppendOnly
	if !b.AppendOnly() {
		change = record.Insert
	}
	if !b.Projected() {
		dec, err := s.dec.get(decoderKey{schemaID: id}, bs)
		if err != nil {
			return err
		}
		return dec.Rows(b.Payload(), int(b.RecordCount()), func(i int, row []byte) error {
			out, err := s.outRow(ctx, id, row)
			if err != nil {
				return err
			}
			return fn(record.Record{Offset: base + int64(i), Change: change, Data: out})
		})
	}
	if s.proj == nil {
		return fmt.Errorf("%w: a projected batch answered a fetch of every column", record.ErrCorruptBatch)
	}
	// The batch holds the projection's columns that version id has, in
	// the projection's order; the others read as null.
	d := &s.dec
	d.present, d.mapping = d.present[:0], d.mapping[:0]
	for _, c := range s.proj.cols {
		if c < len(bs.Columns) {
			d.mapping = append(d.mapping, len(d.present))
			d.present = append(d.present, c)
		} else {
			d.mapping = append(d.mapping, -1)
		}
	}
	sub := arrowlog.SubSchema(bs, d.present)
	dec, err := d.get(decoderKey{schemaID: id, projected: true}, sub)
	if err != nil {
		return err
	}
	whole := len(d.present) == len(s.proj.cols)
	return dec.Rows(b.Payload(), int(b.RecordCount()), func(i int, row []byte) error {
		if !whole {
			if d.buf, err = record.ProjectRow(sub, row, d.mapping, d.buf[:0]); err != nil {
				return err
			}
			row = d.buf
		}
		return fn(record.Record{Offset: base + int64(i), Change: change, Data: row})
	})
}

// outRow returns a row of schema version id as a row of the scanner's
// schema: the handle's (rows of other versions converted), cut to the
// projection. The result is valid until the next call.
func (s *LogScanner) outRow(ctx context.Context, id int16, row []byte) ([]byte, error) {
	row, err := s.conv.convert(ctx, s.t, id, row)
	if err != nil || s.proj == nil {
		return row, err
	}
	s.dec.buf, err = record.ProjectRow(s.t.schema, row, s.proj.cols, s.dec.buf[:0])
	return s.dec.buf, err
}

// knownVersion returns schema version id of the table, reloading the
// metadata a few times at most for one the handle does not know yet (an
// ALTER since it was made).
func (t *Table) knownVersion(ctx context.Context, id int16) (record.Schema, error) {
	if id == t.schemaID {
		return t.schema, nil
	}
	s, ok := t.schemaVersion(id)
	for tries := 0; !ok && tries < maxSchemaRefreshes; tries++ {
		if err := t.Refresh(ctx); err != nil {
			return record.Schema{}, err
		}
		s, ok = t.schemaVersion(id)
	}
	if !ok {
		return record.Schema{}, fmt.Errorf("client: table %s: a row of schema version %s, which its metadata does not have after %d reloads",
			t.qualifiedName(), strconv.Itoa(int(id)), maxSchemaRefreshes)
	}
	return s, nil
}
