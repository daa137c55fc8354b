package arrowlog

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// BatchReader reads payloads of one schema as Arrow record batches with
// arrow-go's IPC reader: the columns as the log holds them, no row in
// between (how the lake writes Parquet from Arrow batches). Not safe for
// concurrent use.
type BatchReader struct {
	schema *arrow.Schema
	prefix []byte // the schema message
	buf    bytes.Buffer
}

// endOfStream is the IPC stream's end marker: continuation, zero length.
var endOfStream = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// NewBatchReader reads payloads of rows of s.
func NewBatchReader(s record.Schema) (*BatchReader, error) {
	schema, err := ArrowSchema(s)
	if err != nil {
		return nil, err
	}
	msg, err := schemaMessageOf(schema)
	if err != nil {
		return nil, err
	}
	return &BatchReader{schema: schema, prefix: msg}, nil
}

// Read decodes a payload of recordCount rows into a record batch of
// ArrowSchema(s), which the caller releases. A payload that does not
// decode, or holds another count of rows, is ErrCorruptBatch.
func (r *BatchReader) Read(payload []byte, recordCount int) (arrow.RecordBatch, error) {
	r.buf.Reset()
	r.buf.Write(r.prefix)
	r.buf.Write(payload)
	r.buf.Write(endOfStream)
	rd, err := ipc.NewReader(bytes.NewReader(r.buf.Bytes()), ipc.WithSchema(r.schema))
	if err != nil {
		return nil, pkgerr.Errorf("arrowlog", "%w: %v", record.ErrCorruptBatch, err)
	}
	defer rd.Release()
	if !rd.Next() {
		return nil, pkgerr.Errorf("arrowlog", "%w: no record batch in the payload (%v)", record.ErrCorruptBatch, rd.Err())
	}
	rec := rd.RecordBatch()
	if int(rec.NumRows()) != recordCount {
		return nil, pkgerr.Errorf("arrowlog", "%w: a payload of %d rows in a batch of %d records", record.ErrCorruptBatch, rec.NumRows(), recordCount)
	}
	rec.Retain()
	return rec, nil
}
