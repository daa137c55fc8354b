package arrowlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
)

// Options configure an Encoder. The zero value writes uncompressed
// payloads.
type Options struct {
	// Compression is the codec of the body buffers: none, zstd or lz4 (the
	// LZ4 frame format).
	Compression record.Compression
	// Level is the zstd level, 1 to 22 as zstd counts them (0 = 3), given
	// to arrow-go's ipc.WithZstdLevel, which rounds it to the nearest of
	// the four levels it has (fastest, default, better, best). Only for
	// zstd.
	Level int
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch {
	case o.Compression > record.CompressionLZ4:
		return pkgerr.Errorf("arrowlog", "options: unknown compression %v", o.Compression)
	case o.Level < 0 || o.Level > 22:
		return pkgerr.Errorf("arrowlog", "options: zstd level %d not in [0, 22]", o.Level)
	case o.Level != 0 && o.Compression != record.CompressionZstd:
		return pkgerr.Errorf("arrowlog", "options: a level is for zstd, not %v", o.Compression)
	}
	return nil
}

// Encoder turns rows of one schema into payloads, one batch at a time:
// it appends rows to arrow-go array builders and writes the batch with
// arrow-go's IPC stream writer, keeping only the record batch message. It
// keeps its builders, allocator, writer and compressor across batches. An
// Encoder is not safe for concurrent use.
type Encoder struct {
	schema record.Schema
	mem    memory.Allocator
	rb     *array.RecordBuilder
	rows   int
	// checks follow the columns whose values Append checks before it
	// appends anything (listed in checked), so a refused row leaves the
	// batch as it was.
	checks  []columnCheck
	checked []int
	// bufferBytes is about the size of the batch's buffers (SizeEstimate),
	// metaBytes that of its metadata.
	bufferBytes, metaBytes int

	// w writes to out; the first batch it writes comes after the schema
	// message, schemaMessage, which the payload drops. A writer that
	// failed is made again.
	opts []ipc.Option
	w    *ipc.Writer
	// zstd compresses the body buffers of a zstd payload, nil for others;
	// body and fb are compressZstd's, reused.
	zstd          *zstd.Encoder
	body          []byte
	fb            *flatbuffers.Builder
	out           bytes.Buffer
	started       bool
	schemaMessage []byte
	// lastRows and lastData are the last batch's rows and value bytes
	// per string or binary column, which the next one reserves.
	lastRows int
	lastData []int
}

// NewEncoder returns an encoder of payloads of rows of s, which must
// validate and have an Arrow mapping for every column.
func NewEncoder(s record.Schema, opts Options) (*Encoder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l, err := newLayout(s)
	if err != nil {
		return nil, err
	}
	schema, err := ArrowSchema(s)
	if err != nil {
		return nil, err
	}
	schemaMessage, err := schemaMessageOf(schema)
	if err != nil {
		return nil, err
	}
	mem := &recycler{}
	e := &Encoder{
		schema:        record.Schema{Columns: append([]record.Column(nil), s.Columns...)},
		mem:           mem,
		rb:            array.NewRecordBuilder(mem, schema),
		checks:        make([]columnCheck, len(s.Columns)),
		metaBytes:     prefixBytes + 128 + structBytes*(l.nodes+l.buffers),
		schemaMessage: schemaMessage,
		opts:          []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem)},
	}
	switch opts.Compression {
	case record.CompressionZstd:
		// The IPC writer writes the batch uncompressed and compressZstd
		// compresses its buffers: arrow-go's writer runs a streaming zstd
		// encoder per buffer (Reset, Write, Close), whose fixed cost made
		// a small batch cost as much as a hundred rows.
		level := opts.Level
		if level == 0 {
			level = defaultZstdLevel
		}
		e.zstd = sharedZstdEncoder(zstd.EncoderLevelFromZstd(level))
	case record.CompressionLZ4:
		// A buffer is stored as it is unless compressing saves space.
		e.opts = append(e.opts, ipc.WithLZ4(), ipc.WithMinSpaceSavings(minSpaceSavings))
	}
	for i, c := range e.schema.Columns {
		e.checks[i] = newColumnCheck(c.Name, c)
		if needsCheck(c.Type) {
			e.checked = append(e.checked, i)
		}
	}
	return e, nil
}

// minSpaceSavings is the least a compressed buffer must save, as a
// fraction of its size, for the writer to keep it compressed.
const minSpaceSavings = 0.01

// schemaMessageOf is the schema message the IPC stream writer writes
// first: what it writes for a stream of no batch, less the end-of-stream
// marker. The writer writes the same bytes for the same schema.
func schemaMessageOf(schema *arrow.Schema) ([]byte, error) {
	var stream bytes.Buffer
	w := ipc.NewWriter(&stream, ipc.WithSchema(schema))
	if err := w.Close(); err != nil {
		return nil, pkgerr.Errorf("arrowlog", "writing the schema message: %w", err)
	}
	if stream.Len() < endOfStreamBytes {
		return nil, pkgerr.Errorf("arrowlog", "a stream of %d bytes has no schema message", stream.Len())
	}
	return stream.Bytes()[:stream.Len()-endOfStreamBytes], nil
}

// endOfStreamBytes is the size of the IPC stream's end-of-stream marker.
const endOfStreamBytes = 8

// Len is the number of rows appended to the batch.
func (e *Encoder) Len() int { return e.rows }

// SizeEstimate is the size the batch's payload would have uncompressed,
// in bytes: what to hold against a batch size limit.
func (e *Encoder) SizeEstimate() int {
	// Validity bitmaps take a bit per value of every column; buffers are
	// padded.
	return e.metaBytes + e.bufferBytes + (e.rows*len(e.schema.Columns)+7)/8
}

// Append adds a row, encoded under the encoder's schema and valid (the
// caller checked it with record.ValidateRow, or made it with a
// record.RowEncoder). It refuses a TIMESTAMP(p) of p 7 to 9 that int64
// nanoseconds cannot hold (*TimestampRangeError) and a STRING or BYTES
// value that would take a column past 2 GiB in one batch
// (ErrColumnTooLarge), at any depth, leaving the batch as it was.
func (e *Encoder) Append(row []byte) error {
	v := record.NewRowView(e.schema, row)
	for _, i := range e.checked {
		if err := checkValue(&e.checks[i], v, i); err != nil {
			for _, i := range e.checked {
				e.checks[i].commit(false)
			}
			return err
		}
	}
	for _, i := range e.checked {
		e.checks[i].commit(true)
	}
	for i, c := range e.schema.Columns {
		e.bufferBytes += appendValue(e.rb.Field(i), c.Type, v, i)
	}
	e.rows++
	return nil
}

// Finish appends the batch's payload to dst and resets the encoder for
// the next batch. A batch has at least one row.
func (e *Encoder) Finish(dst []byte) ([]byte, error) {
	if e.rows == 0 {
		return dst, pkgerr.New("arrowlog", "cannot finish an empty batch")
	}
	rec := e.rb.NewRecordBatch()
	defer rec.Release()
	e.noteSizes(rec)
	e.resetCounts()
	e.reserve()
	return e.write(rec, dst)
}

// EncodeRecord appends to dst the payload of rec, a record batch of the
// encoder's Arrow schema (ArrowSchema of its schema, exactly) made
// elsewhere: how the lake's Parquet files are served as log batches. The
// caller keeps rec and vouches for its values as Append's checks would
// (rows written through Append once); rows appended and not finished stay.
func (e *Encoder) EncodeRecord(rec arrow.RecordBatch, dst []byte) ([]byte, error) {
	if rec.NumRows() == 0 {
		return dst, pkgerr.New("arrowlog", "cannot encode an empty record batch")
	}
	if want := e.rb.Schema(); !rec.Schema().Equal(want) {
		return dst, pkgerr.Errorf("arrowlog", "a record batch of %v, not the encoder's %v", rec.Schema(), want)
	}
	return e.write(rec, dst)
}

// write appends rec's payload to dst.
func (e *Encoder) write(rec arrow.RecordBatch, dst []byte) ([]byte, error) {
	if e.w == nil {
		e.w, e.started = ipc.NewWriter(&e.out, e.opts...), false
	}
	e.out.Reset()
	if err := e.w.Write(rec); err != nil {
		e.w = nil // a writer that failed fails for good
		return dst, pkgerr.Errorf("arrowlog", "writing a record batch: %w", err)
	}
	msg := e.out.Bytes()
	if !e.started {
		if !bytes.HasPrefix(msg, e.schemaMessage) {
			e.w = nil
			return dst, pkgerr.New("arrowlog", "the IPC writer's stream does not start with the schema message")
		}
		msg, e.started = msg[len(e.schemaMessage):], true
	}
	if e.zstd != nil {
		return e.compressZstd(dst, msg)
	}
	return append(dst, msg...), nil
}

// Record returns the batch's rows as an Arrow record batch of the
// payload's schema (ArrowSchema) and resets the encoder for the next
// batch, as Finish does: how the lake turns rows into Parquet files. The
// caller releases the batch on the encoder's goroutine (the encoder's
// allocator is not safe for concurrent use) before the encoder is used
// again.
func (e *Encoder) Record() (arrow.RecordBatch, error) {
	if e.rows == 0 {
		return nil, pkgerr.New("arrowlog", "cannot make a record batch of no rows")
	}
	rec := e.rb.NewRecordBatch()
	e.noteSizes(rec)
	e.resetCounts()
	e.reserve()
	return rec, nil
}

// compressZstd appends msg, an uncompressed payload, to dst with its body
// buffers compressed by zstd as Arrow's BUFFER method lays them out (the
// uncompressed length, then the frame; -1, then the bytes as they are,
// when compressing saves less than minSpaceSavings; an empty buffer stays
// empty), each at an aligned offset, and metadata that says so.
func (e *Encoder) compressZstd(dst, msg []byte) ([]byte, error) {
	var meta batchMeta
	body, err := parseMessage(msg, &meta)
	if err != nil {
		return dst, pkgerr.Errorf("arrowlog", "the IPC writer's record batch: %w", err)
	}
	if meta.compressed {
		return dst, pkgerr.New("arrowlog", "the IPC writer compressed a record batch it was not asked to")
	}
	out := e.body[:0]
	for i, ref := range meta.buffers {
		src := body[ref.offset : ref.offset+ref.length]
		start := len(out)
		switch {
		case len(src) == 0:
		case len(src) < zstdMinBytes:
			out = binary.LittleEndian.AppendUint64(out, notCompressedPrefix)
			out = append(out, src...)
		default:
			out = binary.LittleEndian.AppendUint64(out, uint64(len(src)))
			out = e.zstd.EncodeAll(src, out)
			if saved := 1 - float64(len(out)-start-uncompressedPrefixBytes)/float64(len(src)); saved < minSpaceSavings {
				out = binary.LittleEndian.AppendUint64(out[:start], notCompressedPrefix)
				out = append(out, src...)
			}
		}
		meta.buffers[i] = bufferRef{offset: int64(start), length: int64(len(out) - start)}
		out = padBody(out)
	}
	meta.compressed, meta.codec = true, codecZstd
	if e.fb == nil {
		e.fb = flatbuffers.NewBuilder(256)
	}
	e.body = out
	return appendMessage(dst, e.fb, &meta, out), nil
}

// zstdMinBytes is the smallest buffer compressZstd compresses: below it a
// frame's own header and the call's fixed cost outweigh what it could
// save (a small batch's validity bitmaps and offsets).
const zstdMinBytes = 64

// notCompressedPrefix is notCompressed as a buffer's prefix holds it.
const notCompressedPrefix = ^uint64(0) // -1

// zstdEncoders are the encoders of the payloads' zstd levels, made on
// first use and shared: EncodeAll may be called concurrently, running as
// many at once as there are CPUs. Their window is what decoders accept
// (zstdWindowBytes), so no frame asks a reader for more.
var zstdEncoders struct {
	sync.Mutex
	byLevel map[zstd.EncoderLevel]*zstd.Encoder
}

func sharedZstdEncoder(level zstd.EncoderLevel) *zstd.Encoder {
	zstdEncoders.Lock()
	defer zstdEncoders.Unlock()
	if enc := zstdEncoders.byLevel[level]; enc != nil {
		return enc
	}
	// No frame checksum: the batch's CRC covers the payload.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindowBytes),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(fmt.Sprintf("arrowlog: zstd encoder options: %v", err)) // fixed options: a programming error
	}
	if zstdEncoders.byLevel == nil {
		zstdEncoders.byLevel = map[zstd.EncoderLevel]*zstd.Encoder{}
	}
	zstdEncoders.byLevel[level] = enc
	return enc
}

// noteSizes remembers the rows and the value bytes of each string and
// binary column of a batch, for reserve.
func (e *Encoder) noteSizes(rec arrow.RecordBatch) {
	e.lastRows = int(rec.NumRows())
	if len(e.lastData) != int(rec.NumCols()) {
		e.lastData = make([]int, rec.NumCols())
	}
	for i, col := range rec.Columns() {
		switch a := col.(type) {
		case *array.String:
			e.lastData[i] = len(a.ValueBytes())
		case *array.Binary:
			e.lastData[i] = len(a.ValueBytes())
		}
	}
}

// reserve makes the builders' buffers as large as the last batch needed:
// builders start each batch empty, and growing them value by value
// (zeroing and copying at every doubling) cost more than the encoding.
func (e *Encoder) reserve() {
	if e.lastRows == 0 {
		return
	}
	e.rb.Reserve(e.lastRows)
	for i, n := range e.lastData {
		switch b := e.rb.Field(i).(type) {
		case *array.StringBuilder:
			b.ReserveData(n)
		case *array.BinaryBuilder:
			b.ReserveData(n)
		}
	}
}

// padBody pads body with zeros to the alignment of the next buffer.
func padBody(body []byte) []byte {
	for len(body)%alignment != 0 {
		body = append(body, 0)
	}
	return body
}

// Reset drops the rows of the batch.
func (e *Encoder) Reset() {
	if e.rows > 0 {
		e.rb.NewRecordBatch().Release()
		e.resetCounts()
		e.reserve()
	}
}

func (e *Encoder) resetCounts() {
	e.rows, e.bufferBytes = 0, 0
	for i := range e.checks {
		e.checks[i].reset()
	}
}

// fixedWidth is the bytes per value of a fixed-width column type.
func fixedWidth(t record.DataType) int {
	switch t.Kind() {
	case record.KindTinyInt:
		return 1
	case record.KindSmallInt:
		return 2
	case record.KindInt, record.KindDate, record.KindTime, record.KindFloat:
		return 4
	case record.KindDecimal:
		return 16
	default:
		return 8
	}
}

// The range of timestamp[ns] in milliseconds, and the nanoseconds of
// millisecond at its two ends.
const (
	nanosPerMilli    = 1_000_000
	maxNanosMillis   = math.MaxInt64 / nanosPerMilli               // 2262-04-11T23:47:16.854
	minNanosMillis   = math.MinInt64/nanosPerMilli - 1             // 1677-09-21T00:12:43.145
	maxNanosAtMaxEnd = math.MaxInt64 % nanosPerMilli               // 775,807
	minNanosAtMinEnd = nanosPerMilli + math.MinInt64%nanosPerMilli // 224,192
)

// fitsNanos reports whether int64 nanoseconds since the epoch hold a
// timestamp.
func fitsNanos(millis int64, nanosOfMilli int32) bool {
	switch {
	case millis > maxNanosMillis || millis < minNanosMillis:
		return false
	case millis == maxNanosMillis:
		return nanosOfMilli <= maxNanosAtMaxEnd
	case millis == minNanosMillis:
		return nanosOfMilli >= minNanosAtMinEnd
	}
	return true
}

// nanosSinceEpoch is a timestamp in nanoseconds since the epoch, if it
// fits.
func nanosSinceEpoch(millis int64, nanosOfMilli int32) (int64, bool) {
	if !fitsNanos(millis, nanosOfMilli) {
		return 0, false
	}
	if millis >= 0 {
		return millis*nanosPerMilli + int64(nanosOfMilli), true
	}
	// One millisecond more, less a millisecond of nanoseconds: no step
	// overflows at the lower end.
	return (millis+1)*nanosPerMilli + int64(nanosOfMilli) - nanosPerMilli, true
}
