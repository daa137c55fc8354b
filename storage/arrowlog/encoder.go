package arrowlog

import (
	"math"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Options configure an Encoder. The zero value writes uncompressed
// payloads.
type Options struct {
	// Compression is the codec of the body buffers: none, zstd or lz4 (the
	// LZ4 frame format).
	Compression record.Compression
	// Level is the zstd level, 1 to 22 as zstd counts them (0 = 3); the
	// encoder rounds it to the nearest of the four levels it has (fastest,
	// default, better, best), as Arrow's ipc.WithZstdLevel does. Only for
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

// Encoder turns rows of one schema into payloads, one batch at a time. It
// keeps its column buffers, compressor and metadata builder across
// batches, so in steady state a batch allocates little beyond what its
// buffers outgrow. An Encoder is not safe for concurrent use.
type Encoder struct {
	schema  record.Schema
	columns []columnBuilder
	rows    int
	// checked lists the columns whose values Append checks before it
	// appends anything, so a refused row leaves the batch as it was.
	checked []int
	comp    *compressor
	fb      *flatbuffers.Builder
	meta    batchMeta
	raw     [][]byte // the uncompressed buffers of a batch
	body    []byte
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
	comp, err := newCompressor(opts)
	if err != nil {
		return nil, err
	}
	e := &Encoder{
		schema:  record.Schema{Columns: append([]record.Column(nil), s.Columns...)},
		columns: make([]columnBuilder, len(s.Columns)),
		comp:    comp,
		fb:      flatbuffers.NewBuilder(256),
		meta: batchMeta{
			nodes:   make([]fieldNode, 0, l.nodes),
			buffers: make([]bufferRef, 0, l.buffers),
		},
		raw: make([][]byte, 0, l.buffers),
	}
	for i, c := range e.schema.Columns {
		e.columns[i] = newColumnBuilder(c.Name, c)
		if needsCheck(c.Type) {
			e.checked = append(e.checked, i)
		}
	}
	return e, nil
}

// Len is the number of rows appended to the batch.
func (e *Encoder) Len() int { return e.rows }

// SizeEstimate is the size the batch's payload would have uncompressed,
// in bytes: what to hold against a batch size limit.
func (e *Encoder) SizeEstimate() int {
	// The metadata: prefix, tables and vectors of nodes and buffers.
	size := prefixBytes + 128 + structBytes*(cap(e.meta.nodes)+cap(e.meta.buffers))
	for i := range e.columns {
		size += e.columns[i].size()
	}
	return size
}

// Append adds a row, encoded under the encoder's schema and valid (the
// caller checked it with record.ValidateRow, or made it with a
// record.RowEncoder). It refuses a TIMESTAMP(p) of p 7 to 9 that int64
// nanoseconds cannot hold (*TimestampRangeError) and a STRING or BYTES
// value that would take a column past 2 GiB in one batch
// (ErrColumnTooLarge), leaving the batch as it was.
func (e *Encoder) Append(row []byte) error {
	v := record.NewRowView(e.schema, row)
	for _, i := range e.checked {
		e.columns[i].resetPending()
		if err := checkValue(&e.columns[i], v, i); err != nil {
			return err
		}
	}
	for i := range e.columns {
		appendValue(&e.columns[i], v, i)
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
	defer e.Reset()
	m := &e.meta
	m.length = int64(e.rows)
	m.nodes, m.buffers, e.raw = m.nodes[:0], m.buffers[:0], e.raw[:0]
	for i := range e.columns {
		m.nodes, e.raw = e.columns[i].appendBuffers(m.nodes, e.raw)
	}
	m.compressed = e.comp.comp != record.CompressionNone
	if m.compressed {
		m.codec = e.comp.codec()
	}
	e.body = e.body[:0]
	for _, raw := range e.raw {
		start := len(e.body)
		if m.compressed {
			var err error
			if e.body, err = e.comp.appendBuffer(e.body, raw); err != nil {
				return dst, err
			}
		} else {
			e.body = append(e.body, raw...)
		}
		m.buffers = append(m.buffers, bufferRef{offset: int64(start), length: int64(len(e.body) - start)})
		e.body = padBody(e.body)
	}
	return appendMessage(dst, e.fb, m, e.body), nil
}

// padBody pads body with zeros to the alignment of the next buffer.
func padBody(body []byte) []byte {
	for len(body)%alignment != 0 {
		body = append(body, 0)
	}
	return body
}

// Reset drops the rows of the batch, keeping the buffers.
func (e *Encoder) Reset() {
	for i := range e.columns {
		e.columns[i].reset()
	}
	e.rows = 0
}

// zeros is the value of a null fixed-width slot.
var zeros [16]byte

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

// appendBit sets bit n of bitmap (least significant bit first), growing it
// by a byte every eight bits.
func appendBit(bitmap []byte, n int, set bool) []byte {
	if n%8 == 0 {
		bitmap = append(bitmap, 0)
	}
	if set {
		bitmap[n/8] |= 1 << (n % 8)
	}
	return bitmap
}

func appendUint16(b []byte, v uint16) []byte { return append(b, byte(v), byte(v>>8)) }
func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
func appendUint64(b []byte, v uint64) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
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
