package arrowlog

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// BatchReader reads payloads of one schema as Arrow record batches: the
// columns as the log holds them, no row in between (how the lake writes
// Parquet from Arrow batches). It checks a payload's structure as
// Validate does (not the values: the log's payloads were validated when
// they were appended, and their batches' checksums are checked), inflates
// its buffers into memory it keeps, and points the arrays at them, so a
// batch costs no allocation of its column data. Not safe for concurrent
// use.
type BatchReader struct {
	schema *arrow.Schema
	dec    *Decoder
	data   []arrow.ArrayData
	cols   []arrow.Array
}

// NewBatchReader reads payloads of rows of s.
func NewBatchReader(s record.Schema) (*BatchReader, error) {
	schema, err := ArrowSchema(s)
	if err != nil {
		return nil, err
	}
	dec, err := NewDecoder(s)
	if err != nil {
		return nil, err
	}
	return &BatchReader{schema: schema, dec: dec}, nil
}

// Read decodes a payload of recordCount rows into a record batch of
// ArrowSchema(s), which the caller releases. Its columns point into the
// payload and into the reader's memory: the batch is valid until the next
// Read, and while the payload is. A payload whose structure does not
// check, or holds another count of rows, is ErrCorruptBatch.
func (r *BatchReader) Read(payload []byte, recordCount int) (arrow.RecordBatch, error) {
	if err := r.dec.open(payload, recordCount); err != nil {
		return nil, pkgerr.Errorf("arrowlog", "%w: %w", record.ErrCorruptBatch, err)
	}
	cur := cursor{nodes: r.dec.meta.nodes, bufs: r.dec.bufs}
	r.data, r.cols = r.data[:0], r.cols[:0]
	for _, f := range r.schema.Fields() {
		r.data = append(r.data, loadData(f.Type, &cur))
	}
	for _, d := range r.data {
		r.cols = append(r.cols, array.MakeFromData(d))
		d.Release()
	}
	rec := array.NewRecordBatch(r.schema, r.cols, int64(recordCount))
	for _, c := range r.cols {
		c.Release()
	}
	return rec, nil
}

// loadData is the array data of a column (or child) of type t, whose
// field nodes and buffers cur hands out in the order of the IPC format
// (a node's buffers, then its children's), as Decoder.open checked them.
func loadData(t arrow.DataType, cur *cursor) arrow.ArrayData {
	node, bufs := cur.next(len(t.Layout().Buffers))
	buffers := make([]*memory.Buffer, len(bufs))
	for i, b := range bufs {
		if i == 0 && node.nullCount == 0 {
			continue // no validity bitmap: every value is set
		}
		buffers[i] = memory.NewBufferBytes(b)
	}
	var children []arrow.ArrayData
	if nested, ok := t.(arrow.NestedType); ok {
		for _, f := range nested.Fields() {
			children = append(children, loadData(f.Type, cur))
		}
	}
	d := array.NewData(t, int(node.length), buffers, children, int(node.nullCount), 0)
	for _, c := range children {
		c.Release()
	}
	return d
}
