package lake

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// rowGroupBytes is where the writer starts a new row group: engines read
// a row group as a unit, and a file of the 128 MiB target holds a few.
const rowGroupBytes = 64 << 20

// FileWriter writes one Parquet data file of a lake table: zstd pages,
// row groups of about rowGroupBytes, the Iceberg field ids on the
// columns. Close returns what the manifest says of the file.
type FileWriter struct {
	schema      Schema
	arrowSchema *arrow.Schema
	w           *countingWriter
	pw          *pqarrow.FileWriter // from the first Write, which picks the encodings
	rows        int64
	nulls       []int64 // per top-level field, counted from the Arrow columns
}

// NewFileWriter starts a data file of rows of schema (the lake schema;
// arrowSchema is ArrowSchema(schema)) on w.
func NewFileWriter(w io.Writer, schema Schema, arrowSchema *arrow.Schema) (*FileWriter, error) {
	return &FileWriter{schema: schema, arrowSchema: arrowSchema, w: &countingWriter{w: w}, nulls: make([]int64, len(schema.Fields))}, nil
}

// open starts the Parquet writer, its columns' encodings chosen from
// first, the file's first rows (nil: the defaults).
func (fw *FileWriter) open(first arrow.RecordBatch) error {
	opts := []parquet.WriterProperty{
		// The round's CPU is the cluster's, taken from its writes. On
		// bench produce's rows (BenchmarkFileBuilderAppendBatch, quiet
		// machine) a record cost 585 ns at zstd's default level with a
		// dictionary on every column and min and max of binaries, 500 at
		// its fastest level without those min and max, 290 without a
		// dictionary of the offsets and timestamps (each offset new, a
		// dictionary hashes every one before giving up), 245 with those
		// delta-encoded (they only grow). Columns whose first values are
		// mostly distinct get no dictionary, and those that do not
		// compress no compression (sampleColumns).
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1),
		parquet.WithDictionaryFor(OffsetColumn, false),
		parquet.WithDictionaryFor(TimestampColumn, false),
		parquet.WithDictionaryFor(BucketColumn, false),
		parquet.WithEncodingFor(OffsetColumn, parquet.Encodings.DeltaBinaryPacked),
		parquet.WithEncodingFor(TimestampColumn, parquet.Encodings.DeltaBinaryPacked),
		// A file holds one bucket: its deltas are all zero, no hashing.
		parquet.WithEncodingFor(BucketColumn, parquet.Encodings.DeltaBinaryPacked),
		parquet.WithCreatedBy("floe"),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(1 << 30), // row groups end by bytes (Write), not rows
	}
	for _, f := range fw.schema.Fields {
		if f.Type.Primitive == "binary" {
			// No bounds are kept of binaries over maxBoundBytes, and
			// their min and max cost a round much of the write; their
			// null counts come from the Arrow columns (Write).
			opts = append(opts, parquet.WithStatsFor(f.Name, false))
		}
	}
	if first != nil {
		for i, f := range first.Schema().Fields() {
			if f.Name == OffsetColumn || f.Name == TimestampColumn || f.Name == BucketColumn {
				continue
			}
			distinct, incompressible := sampleColumn(first.Column(i))
			if distinct {
				opts = append(opts, parquet.WithDictionaryFor(f.Name, false))
				if deltaEncodable(f.Type) {
					// Integers (ids, times) stored as deltas: a few bits
					// each where plain took 8 bytes for zstd to work on.
					opts = append(opts, parquet.WithEncodingFor(f.Name, parquet.Encodings.DeltaBinaryPacked))
				}
			}
			if incompressible {
				opts = append(opts, parquet.WithCompressionFor(f.Name, compress.Codecs.Uncompressed))
			}
		}
	}
	pw, err := pqarrow.NewFileWriter(fw.arrowSchema, fw.w, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		return fmt.Errorf("lake: parquet writer: %w", err)
	}
	fw.pw = pw
	return nil
}

// deltaEncodable: a column Parquet stores as INT32 or INT64, which
// DELTA_BINARY_PACKED encodes.
func deltaEncodable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP:
		return true
	}
	return false
}

// Write adds a batch of rows of the file's Arrow schema.
func (fw *FileWriter) Write(rec arrow.RecordBatch) error {
	if fw.pw == nil {
		if err := fw.open(rec); err != nil {
			return err
		}
	}
	if fw.pw.RowGroupTotalBytesWritten() >= rowGroupBytes {
		if err := fw.pw.NewBufferedRowGroupChecked(); err != nil {
			return fmt.Errorf("lake: parquet row group: %w", err)
		}
	}
	if err := fw.pw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("lake: parquet write: %w", err)
	}
	fw.rows += rec.NumRows()
	for i := range min(len(fw.nulls), int(rec.NumCols())) {
		fw.nulls[i] += int64(rec.Column(i).NullN())
	}
	return nil
}

// Rows is the rows written so far; BytesWritten about the file's size.
func (fw *FileWriter) Rows() int64 { return fw.rows }

// BytesWritten is the bytes written to the file and those its open row
// group holds, compressed.
func (fw *FileWriter) BytesWritten() int64 {
	if fw.pw == nil {
		return fw.w.n
	}
	return fw.w.n + fw.pw.RowGroupTotalCompressedBytes()
}

// Close finishes the file and returns its manifest description: path
// and partition are the caller's to fill.
func (fw *FileWriter) Close() (DataFile, error) {
	if fw.pw == nil {
		if err := fw.open(nil); err != nil {
			return DataFile{}, err
		}
	}
	if err := fw.pw.Close(); err != nil {
		return DataFile{}, fmt.Errorf("lake: parquet close: %w", err)
	}
	md, err := fw.pw.FileMetadata()
	if err != nil {
		return DataFile{}, fmt.Errorf("lake: parquet metadata: %w", err)
	}
	f := DataFile{RecordCount: fw.rows, SizeBytes: fw.w.n}
	if err := fw.stats(md, &f); err != nil {
		return DataFile{}, err
	}
	return f, nil
}

// stats fills the value and null counts of the top-level columns and the
// bounds of those whose Parquet statistics are Iceberg's single-value
// form as they are (integers, dates, times, timestamps, booleans, and
// strings and binaries up to maxBoundBytes).
func (fw *FileWriter) stats(md *metadata.FileMetaData, f *DataFile) error {
	ids := map[string]Field{}
	for _, fd := range fw.schema.Fields {
		ids[fd.Name] = fd
	}
	f.ValueCounts, f.NullCounts = map[int]int64{}, map[int]int64{}
	f.LowerBounds, f.UpperBounds = map[int][]byte{}, map[int][]byte{}
	merged := map[int]metadata.TypedStatistics{}
	noBounds := map[int]bool{} // a row group without min and max of non-null values
	noNulls := map[int]bool{}  // a row group without a null count
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("lake: parquet column chunk: %w", err)
			}
			path := cc.PathInSchema()
			fd, ok := ids[path.String()]
			if len(path) != 1 || !ok {
				continue // a nested column's leaf: no statistics kept
			}
			f.ValueCounts[fd.ID] += cc.NumValues()
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasNullCount() {
				noNulls[fd.ID], noBounds[fd.ID] = true, true
				continue
			}
			f.NullCounts[fd.ID] += st.NullCount()
			if !boundsKept(fd.Type) || (!st.HasMinMax() && st.NullCount() < cc.NumValues()) {
				noBounds[fd.ID] = true
				continue
			}
			if !st.HasMinMax() {
				continue // nulls only
			}
			if have := merged[fd.ID]; have != nil {
				have.Merge(st)
			} else {
				merged[fd.ID] = st
			}
		}
	}
	for id := range noNulls {
		delete(f.NullCounts, id)
	}
	for i, fd := range fw.schema.Fields {
		if fd.Type.Primitive == "binary" && i < len(fw.nulls) {
			// No Parquet statistics written (NewFileWriter): the counts
			// come from the columns.
			f.ValueCounts[fd.ID], f.NullCounts[fd.ID] = fw.rows, fw.nulls[i]
		}
	}
	for id, st := range merged {
		if noBounds[id] || !st.HasMinMax() {
			continue
		}
		lo, hi := st.EncodeMin(), st.EncodeMax()
		if len(lo) > maxBoundBytes || len(hi) > maxBoundBytes {
			continue
		}
		f.LowerBounds[id], f.UpperBounds[id] = lo, hi
	}
	return nil
}

// maxBoundBytes bounds a string or binary bound: a longer one is left
// out rather than truncated.
const maxBoundBytes = 64

func boundsKept(t Type) bool {
	switch t.Primitive {
	case "boolean", "int", "long", "date", "time", "timestamp", "timestamptz", "string", "binary":
		return true
	}
	return false // floats (NaN), decimals (Parquet's width is not Iceberg's), nested
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
