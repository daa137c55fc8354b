package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedb/floe/tiering"
)

// ScanColumn is a column a scan returns: the lake field it reads (by
// id; 0 for a column the file does not have, which reads as null) and the
// Arrow type it returns it as (a log batch's, arrowlog's).
type ScanColumn struct {
	FieldID int
	Type    arrow.DataType
}

// Chunk is a run of a data file's rows: the scan's columns, each row's
// log offset and its record's timestamp (milliseconds). Release it.
type Chunk struct {
	Columns      []arrow.Array
	Offsets      []int64
	TimestampsMs []int64
}

// Rows is the chunk's row count.
func (c *Chunk) Rows() int { return len(c.Offsets) }

// Release frees the chunk's columns.
func (c *Chunk) Release() {
	for _, a := range c.Columns {
		a.Release()
	}
	c.Columns = nil
}

// scanBufferBytes is the read buffer of each column a scan reads: the
// scan streams a file's pages, never a whole column chunk of a row group
// (which may be tens of megabytes), so an open scan holds little.
const scanBufferBytes = 1 << 20

// FileScan reads one bucket's data file in offset order, from a given
// offset on, a chunk at a time: a lake reader keeps it open between the
// reads of a consumer going through the file. It is not safe for
// concurrent use.
type FileScan struct {
	span   FileSpan
	src    *objectFile
	pf     *file.Reader
	rr     pqarrow.RecordReader
	cols   []ScanColumn
	colPos []int // each column's position in the reader's batches; -1: null
	offPos int
	tsPos  int
	// cur is the reader's current batch, row the next row of it to
	// return; next is the offset the scan returns from.
	cur  arrow.RecordBatch
	row  int
	next int64
}

// OpenScan opens span's file for the columns cols (system columns are
// read besides them), positioned at the first record at or after from.
// schema is the lake schema the fields are looked up in by id; a field
// the file lacks (added to the table after it was written) reads as null.
func (t *Table) OpenScan(ctx context.Context, span FileSpan, schema Schema, cols []ScanColumn, from int64, batchRows int) (*FileScan, error) {
	offID, tsID := systemFieldID(schema, OffsetColumn), systemFieldID(schema, TimestampColumn)
	if offID == 0 || tsID == 0 {
		return nil, fmt.Errorf("%w: the schema has no %s or %s", ErrInvalidMetadata, OffsetColumn, TimestampColumn)
	}
	src := &objectFile{ctx: ctx, store: t.store, key: span.Key, size: span.Size}
	if src.size <= 0 {
		info, err := t.store.Stat(ctx, span.Key)
		if err != nil {
			return nil, fmt.Errorf("lake: data file %s: %w", span.Key, err)
		}
		src.size = info.Size
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled, props.BufferSize = true, scanBufferBytes
	pf, err := file.NewParquetReader(src, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidData, span.Key, err)
	}
	s := &FileScan{span: span, src: src, pf: pf, cols: cols, next: from}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(max(batchRows, 1))}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidData, span.Key, err)
	}
	leaves := leavesByField(pf)
	want := []int{offID, tsID}
	for _, c := range cols {
		if c.FieldID != 0 {
			want = append(want, c.FieldID)
		}
	}
	var indices []int
	for _, id := range want {
		indices = append(indices, leaves[id]...)
	}
	if len(leaves[offID]) != 1 || len(leaves[tsID]) != 1 {
		return nil, fmt.Errorf("%w: %s has no %s or %s column", ErrInvalidData, span.Key, OffsetColumn, TimestampColumn)
	}
	slices.Sort(indices)
	indices = slices.Compact(indices)
	if pf.NumRows() == 0 {
		ok = true
		return s, nil
	}
	if s.rr, err = fr.GetRecordReader(ctx, indices, nil); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidData, span.Key, err)
	}
	pos := map[int]int{}
	for i, f := range s.rr.Schema().Fields() {
		if id, err := strconv.Atoi(fieldMeta(f, fieldIDKey)); err == nil {
			pos[id] = i
		}
	}
	s.offPos, s.tsPos = pos[offID], pos[tsID]
	s.colPos = make([]int, len(cols))
	for i, c := range cols {
		s.colPos[i] = -1
		if p, found := pos[c.FieldID]; found && c.FieldID != 0 {
			s.colPos[i] = p
		}
	}
	if from > span.From {
		if err := s.seek(ctx, fr, leaves[offID][0], from); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

// seek moves the scan to the first row at or after offset from, by the
// file's offset column.
func (s *FileScan) seek(ctx context.Context, fr *pqarrow.FileReader, offLeaf int, from int64) error {
	rr, err := fr.GetRecordReader(ctx, []int{offLeaf}, nil)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidData, s.span.Key, err)
	}
	defer rr.Release()
	row := int64(0)
	for rr.Next() {
		offs, ok := rr.RecordBatch().Column(0).(*array.Int64)
		if !ok {
			return fmt.Errorf("%w: %s: %s is not a long column", ErrInvalidData, s.span.Key, OffsetColumn)
		}
		vals := offs.Int64Values()
		if i, _ := slices.BinarySearch(vals, from); i < len(vals) {
			row += int64(i)
			return s.rr.SeekToRow(row)
		}
		row += int64(len(vals))
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("lake: %s: %w", s.span.Key, err)
	}
	s.rr.Release()
	s.rr = nil // nothing at or after from
	return nil
}

// Next returns up to maxRows rows from the scan's position on, or io.EOF
// once the file is read. ctx bounds the store reads it makes.
func (s *FileScan) Next(ctx context.Context, maxRows int) (*Chunk, error) {
	s.src.ctx = ctx
	for {
		if s.rr == nil {
			return nil, io.EOF
		}
		if s.cur != nil && s.row < int(s.cur.NumRows()) {
			c, err := s.take(maxRows)
			if c != nil || err != nil {
				return c, err
			}
			continue // rows below next: skipped
		}
		if s.cur != nil {
			s.cur.Release()
			s.cur = nil
		}
		if !s.rr.Next() {
			err := s.rr.Err()
			s.rr.Release()
			s.rr = nil
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("lake: %s: %w", s.span.Key, err)
			}
			return nil, io.EOF
		}
		s.cur, s.row = s.rr.RecordBatch(), 0
		s.cur.Retain()
	}
}

// take cuts the next rows of the current batch into a chunk: nil when
// they all lie below the scan's offset.
func (s *FileScan) take(maxRows int) (*Chunk, error) {
	offs, ok1 := s.cur.Column(s.offPos).(*array.Int64)
	ts, ok2 := s.cur.Column(s.tsPos).(*array.Timestamp)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: %s: the system columns are not long and timestamptz", ErrInvalidData, s.span.Key)
	}
	vals := offs.Int64Values()
	start := s.row
	for start < len(vals) && vals[start] < s.next {
		start++
	}
	n := min(len(vals)-start, max(maxRows, 1))
	s.row = start + n
	if n == 0 {
		return nil, nil
	}
	c := &Chunk{Offsets: vals[start : start+n], TimestampsMs: make([]int64, n)}
	for i := range n {
		if ts.IsNull(start+i) || offs.IsNull(start+i) {
			return nil, fmt.Errorf("%w: %s: a null %s or %s", ErrInvalidData, s.span.Key, OffsetColumn, TimestampColumn)
		}
		c.TimestampsMs[i] = floorDiv(int64(ts.Value(start+i)), 1000)
	}
	for i := 1; i < n; i++ {
		if c.Offsets[i] <= c.Offsets[i-1] {
			return nil, fmt.Errorf("%w: %s: offsets %d then %d", ErrInvalidData, s.span.Key, c.Offsets[i-1], c.Offsets[i])
		}
	}
	c.Offsets = slices.Clone(c.Offsets)
	for i, col := range s.cols {
		var a arrow.Array
		if p := s.colPos[i]; p < 0 {
			a = array.MakeArrayOfNull(memory.DefaultAllocator, col.Type, n)
		} else {
			sl := array.NewSlice(s.cur.Column(p), int64(start), int64(start+n))
			var err error
			a, err = castColumn(memory.DefaultAllocator, sl, col.Type)
			sl.Release()
			if err != nil {
				c.Release()
				return nil, fmt.Errorf("lake: %s: %w", s.span.Key, err)
			}
		}
		c.Columns = append(c.Columns, a)
	}
	s.next = c.Offsets[n-1] + 1
	return c, nil
}

// Span is the file the scan reads; Position the offset it returns from.
func (s *FileScan) Span() FileSpan  { return s.span }
func (s *FileScan) Position() int64 { return s.next }

// Close releases the scan.
func (s *FileScan) Close() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	if s.rr != nil {
		s.rr.Release()
		s.rr = nil
	}
	if s.pf != nil {
		s.pf.Close()
		s.pf = nil
	}
}

// systemFieldID is the id of a system column in schema; 0 when missing.
func systemFieldID(s Schema, name string) int {
	for _, f := range s.Fields {
		if f.Name == name {
			return f.ID
		}
	}
	return 0
}

// leavesByField maps each top-level field id of a Parquet file to its
// leaf columns.
func leavesByField(pf *file.Reader) map[int][]int {
	sch := pf.MetaData().Schema
	out := map[int][]int{}
	for i := range sch.NumColumns() {
		id := int(sch.ColumnRoot(i).FieldID())
		out[id] = append(out[id], i)
	}
	return out
}

func fieldMeta(f arrow.Field, key string) string {
	if i := f.Metadata.FindKey(key); i >= 0 {
		return f.Metadata.Values()[i]
	}
	return ""
}

// objectFile reads an object of the store at any offset, for the Parquet
// reader: a ranged Get per read.
type objectFile struct {
	ctx   context.Context
	store tiering.ObjectStore
	key   string
	size  int64
	pos   int64
}

func (o *objectFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), o.size-off)
	rc, err := o.store.Get(o.ctx, o.key, off, n)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	got, err := io.ReadFull(rc, p[:n])
	if err == nil && got < len(p) {
		err = io.EOF
	}
	return got, err
}

func (o *objectFile) Read(p []byte) (int, error) {
	n, err := o.ReadAt(p, o.pos)
	o.pos += int64(n)
	return n, err
}

func (o *objectFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.pos
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, fmt.Errorf("lake: seek whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("lake: seek to %d", offset)
	}
	o.pos = offset
	return offset, nil
}
