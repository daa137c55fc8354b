package lake

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
)

// BatchWriter turns a scan's chunks back into log batches: Arrow batches
// of one schema version of the table (or of some of its columns, for a
// fetch that asked for them), one per run of rows at consecutive offsets
// with one timestamp, which is what a log batch holds. A reader of the
// log reads them as the log's own.
type BatchWriter struct {
	enc       *arrowlog.Encoder
	schema    *arrow.Schema
	opts      record.BatchOptions
	payload   []byte
	maxRecord int
}

// NewBatchWriter writes batches of schema (schema version id's columns,
// or those a projection kept: projected), whose Arrow types the scan's
// columns were read as.
func NewBatchWriter(schema record.Schema, id int16, projected bool) (*BatchWriter, error) {
	enc, err := arrowlog.NewEncoder(schema, arrowlog.Options{})
	if err != nil {
		return nil, err
	}
	as, err := arrowlog.ArrowSchema(schema)
	if err != nil {
		return nil, err
	}
	return &BatchWriter{enc: enc, schema: as, maxRecord: maxBatchRows,
		opts: record.BatchOptions{SchemaID: id, Format: record.PayloadArrow, AppendOnly: true, Projected: projected}}, nil
}

// AsInserts makes the writer's batches a primary-key table's rows as of
// the lake's version, each an insert (+I) at its key's latest change:
// Arrow batches without the append-only bit, which readers take as +I
// records. A consumer of the table's changelog reads them first, then the
// changelog from the version's offset on.
func (w *BatchWriter) AsInserts() { w.opts.AppendOnly = false }

// maxBatchRows bounds the rows of one batch made from the lake.
const maxBatchRows = 1 << 16

// ScanColumns are the columns a scan reads for this writer: the lake
// field of each of the writer's columns (fieldIDs; 0 for none) and its
// Arrow type.
func (w *BatchWriter) ScanColumns(fieldIDs []int) []ScanColumn {
	out := make([]ScanColumn, len(fieldIDs))
	for i, id := range fieldIDs {
		out[i] = ScanColumn{FieldID: id, Type: w.schema.Field(i).Type}
	}
	return out
}

// Append appends c's rows from row from on to dst as batches, stopping
// once dst holds maxBytes (at least one batch is written), and returns
// dst and the rows it took.
func (w *BatchWriter) Append(dst []byte, c *Chunk, from, maxBytes int) ([]byte, int, error) {
	return w.AppendBelow(dst, c, from, maxBytes, math.MaxInt64)
}

// AppendBelow is Append of the rows at offsets below below only: it
// stops at the first at or past it.
func (w *BatchWriter) AppendBelow(dst []byte, c *Chunk, from, maxBytes int, below int64) ([]byte, int, error) {
	start := len(dst)
	rows, _ := slices.BinarySearch(c.Offsets, below)
	i := from
	for i < rows && (len(dst) == start || len(dst)-start < maxBytes) {
		j := i + 1
		for j < rows && j-i < w.maxRecord && c.Offsets[j] == c.Offsets[j-1]+1 && c.TimestampsMs[j] == c.TimestampsMs[i] {
			j++
		}
		var err error
		if dst, err = w.appendRun(dst, c, i, j); err != nil {
			return dst[:start], 0, err
		}
		i = j
	}
	return dst, i - from, nil
}

// appendRun appends rows [i, j) of c as one batch.
func (w *BatchWriter) appendRun(dst []byte, c *Chunk, i, j int) ([]byte, error) {
	cols := make([]arrow.Array, len(c.Columns))
	for k, a := range c.Columns {
		cols[k] = array.NewSlice(a, int64(i), int64(j))
	}
	rec := array.NewRecordBatch(w.schema, cols, int64(j-i))
	for _, a := range cols {
		a.Release()
	}
	defer rec.Release()
	var err error
	if w.payload, err = w.enc.EncodeRecord(rec, w.payload[:0]); err != nil {
		return dst, fmt.Errorf("lake: batch of offsets %d to %d: %w", c.Offsets[i], c.Offsets[j-1], err)
	}
	start := len(dst)
	// Room first: BuildBatch appends an Arrow payload as it is, so dst
	// keeps its array and the batch is its tail.
	dst = slices.Grow(dst, record.HeaderSize+len(w.payload))
	b, err := record.BuildBatch(w.opts, int32(j-i), w.payload, dst)
	if err != nil {
		return dst, err
	}
	b.SetBaseOffset(c.Offsets[i])
	b.SetCommitTimestamp(c.TimestampsMs[i])
	return dst[:start+len(b)], nil
}
