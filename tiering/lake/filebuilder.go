package lake

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedb/floe/storage/record"
)

// batchRows is the rows a FileBuilder encodes into one Arrow batch before
// handing it to the Parquet writer.
const batchRows = 8192

// FileBuilder writes rows of a table into one Parquet data file in
// memory: a RowBatcher's batches into a FileWriter. Not safe for
// concurrent use.
type FileBuilder struct {
	rows     *RowBatcher
	buf      bytes.Buffer
	fw       *FileWriter
	rawBytes int64 // of the rows appended
}

// NewFileBuilder starts a data file of rows of s in the lake schema ls
// (NewSchema of s).
func NewFileBuilder(s record.Schema, ls Schema) (*FileBuilder, error) {
	as, err := ArrowSchema(ls)
	if err != nil {
		return nil, err
	}
	rb, err := NewRowBatcher(s, as)
	if err != nil {
		return nil, err
	}
	fb := &FileBuilder{rows: rb}
	if fb.fw, err = NewFileWriter(&fb.buf, ls, as); err != nil {
		return nil, err
	}
	return fb, nil
}

// Append adds a row with its record's bucket, offset and timestamp
// (milliseconds).
func (fb *FileBuilder) Append(row []byte, bucket int32, offset, timestampMs int64) error {
	if err := fb.rows.Append(row, bucket, offset, timestampMs); err != nil {
		return err
	}
	fb.rawBytes += int64(len(row))
	if fb.rows.Rows() >= batchRows {
		return fb.flush()
	}
	return nil
}

// AppendBatch adds a log batch's Arrow columns (of a schema version of
// the table: arrowlog's types, the columns added since missing) as they
// are, without a row in between, its records at offsets from baseOffset
// on, all of its timestamp. The rows appended before it go first.
func (fb *FileBuilder) AppendBatch(rec arrow.RecordBatch, bucket int32, baseOffset, timestampMs int64) error {
	if err := fb.flush(); err != nil {
		return err
	}
	out, err := fb.rows.convert(rec, bucket, baseOffset, timestampMs)
	if err != nil {
		return err
	}
	defer out.Release()
	for _, c := range rec.Columns() {
		fb.rawBytes += dataBytes(c.Data())
	}
	return fb.fw.Write(out)
}

func (fb *FileBuilder) flush() error {
	if fb.rows.Rows() == 0 {
		return nil
	}
	rec, err := fb.rows.Batch()
	if err != nil {
		return err
	}
	defer rec.Release()
	return fb.fw.Write(rec)
}

// Rows is the rows appended so far; Bytes about the file's size so far.
func (fb *FileBuilder) Rows() int64 { return fb.fw.Rows() + int64(fb.rows.Rows()) }

// Bytes is what the file holds so far, counted as the rows appended
// (uncompressed): an upper bound of the memory it takes and of its size,
// which compression and Parquet's encodings shrink.
func (fb *FileBuilder) Bytes() int64 { return fb.rawBytes }

// Finish closes the file and returns its bytes and its description (path
// and partition left to PutDataFile).
func (fb *FileBuilder) Finish() ([]byte, DataFile, error) {
	if err := fb.flush(); err != nil {
		return nil, DataFile{}, err
	}
	df, err := fb.fw.Close()
	if err != nil {
		return nil, DataFile{}, err
	}
	return fb.buf.Bytes(), df, nil
}
