package lake

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
)

// RowBatcher turns rows of a table's schema, each with the bucket, offset
// and timestamp of its record, into Arrow record batches of the lake
// schema: arrowlog's encoder builds the columns as the log has them, then
// the columns whose types differ are cast, and the system columns follow.
// Not safe for concurrent use.
type RowBatcher struct {
	enc     *arrowlog.Encoder
	schema  *arrow.Schema // the lake's
	columns int           // the table's
	mem     memory.Allocator
	bucket  *array.Int32Builder
	offset  *array.Int64Builder
	ts      *array.TimestampBuilder
	rows    int
}

// NewRowBatcher batches rows of s, a table schema that lakeSchema (the
// Arrow schema of the lake schema made of s) maps.
func NewRowBatcher(s record.Schema, lakeSchema *arrow.Schema) (*RowBatcher, error) {
	enc, err := arrowlog.NewEncoder(record.Schema{Columns: s.Columns}, arrowlog.Options{})
	if err != nil {
		return nil, err
	}
	if lakeSchema.NumFields() != len(s.Columns)+3 {
		return nil, fmt.Errorf("lake: a lake schema of %d fields for %d columns", lakeSchema.NumFields(), len(s.Columns))
	}
	mem := memory.NewGoAllocator()
	return &RowBatcher{enc: enc, schema: lakeSchema, columns: len(s.Columns), mem: mem,
		bucket: array.NewInt32Builder(mem), offset: array.NewInt64Builder(mem),
		ts: array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})}, nil
}

// Append adds a row (of the batcher's schema) with its record's bucket,
// offset and timestamp (milliseconds since the epoch).
func (b *RowBatcher) Append(row []byte, bucket int32, offset, timestampMs int64) error {
	if err := b.enc.Append(row); err != nil {
		return err
	}
	b.bucket.Append(bucket)
	b.offset.Append(offset)
	b.ts.Append(arrow.Timestamp(timestampMs * 1000))
	b.rows++
	return nil
}

// Rows is the rows appended since the last batch.
func (b *RowBatcher) Rows() int { return b.rows }

// Batch returns the rows appended so far as a record batch of the lake
// schema (the caller releases it), and starts the next.
func (b *RowBatcher) Batch() (arrow.RecordBatch, error) {
	if b.rows == 0 {
		return nil, fmt.Errorf("lake: a batch of no rows")
	}
	rec, err := b.enc.Record()
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	cols := make([]arrow.Array, 0, b.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range b.columns {
		c, err := castColumn(b.mem, rec.Column(i), b.schema.Field(i).Type)
		if err != nil {
			return nil, fmt.Errorf("lake: column %s: %w", b.schema.Field(i).Name, err)
		}
		cols = append(cols, c)
	}
	cols = append(cols, b.bucket.NewArray(), b.offset.NewArray(), b.ts.NewArray())
	n := b.rows
	b.rows = 0
	return array.NewRecordBatch(b.schema, cols, int64(n)), nil
}

// convert makes a record batch of the lake schema of a log batch (the
// Arrow columns of a schema version of the table: the first columns, the
// later ones null), its records at offsets from baseOffset on, all of
// timestamp timestampMs (the batch's). The caller releases the result.
func (b *RowBatcher) convert(rec arrow.RecordBatch, bucket int32, baseOffset, timestampMs int64) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	if int(rec.NumCols()) > b.columns {
		return nil, fmt.Errorf("lake: a batch of %d columns for a table of %d", rec.NumCols(), b.columns)
	}
	cols := make([]arrow.Array, 0, b.schema.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for i := range b.columns {
		to := b.schema.Field(i).Type
		if i >= int(rec.NumCols()) {
			cols = append(cols, array.MakeArrayOfNull(b.mem, to, n))
			continue
		}
		c, err := castColumn(b.mem, rec.Column(i), to)
		if err != nil {
			return nil, fmt.Errorf("lake: column %s: %w", b.schema.Field(i).Name, err)
		}
		cols = append(cols, c)
	}
	b.bucket.Reserve(n)
	b.offset.Reserve(n)
	b.ts.Reserve(n)
	for i := range n {
		b.bucket.UnsafeAppend(bucket)
		b.offset.UnsafeAppend(baseOffset + int64(i))
		b.ts.UnsafeAppend(arrow.Timestamp(timestampMs * 1000))
	}
	cols = append(cols, b.bucket.NewArray(), b.offset.NewArray(), b.ts.NewArray())
	return array.NewRecordBatch(b.schema, cols, int64(n)), nil
}

// dataBytes is the size of an array's buffers, its children's included.
func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
