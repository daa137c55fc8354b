package arrowlog

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
)

// DecoderConfig configures a Decoder. The zero value is usable.
type DecoderConfig struct {
	// MaxBodyBytes bounds what a compressed payload's body buffers may
	// declare they inflate to, in all; a payload over it is refused with a
	// *LimitError (ErrBodyTooLarge) before anything is decompressed.
	// Default (0) record.MaxBatchSize. A server sets its batch size limit.
	MaxBodyBytes int
}

// Validate reports the first invalid field.
func (c DecoderConfig) Validate() error {
	if c.MaxBodyBytes < 0 || c.MaxBodyBytes > record.MaxBatchSize {
		return pkgerr.Errorf("arrowlog", "decoder config: MaxBodyBytes %d not in [0, %d]", c.MaxBodyBytes, record.MaxBatchSize)
	}
	return nil
}

// Decoder reads payloads of one schema: it checks them (Validate) and
// turns them back into rows (Rows). It keeps its buffers across payloads.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	schema  record.Schema
	layout  layout
	maxBody int
	meta    batchMeta
	bufs    [][]byte
	inflate decompressor
	columns []columnReader
	rows    *record.RowEncoder
	row     []byte
}

// NewDecoder returns a decoder of payloads of rows of s with the default
// DecoderConfig.
func NewDecoder(s record.Schema) (*Decoder, error) {
	return NewDecoderConfig(s, DecoderConfig{})
}

// NewDecoderConfig returns a decoder of payloads of rows of s.
func NewDecoderConfig(s record.Schema, cfg DecoderConfig) (*Decoder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = record.MaxBatchSize
	}
	rows, err := record.NewRowEncoder(s)
	if err != nil {
		return nil, err
	}
	l, err := newLayout(s)
	if err != nil {
		return nil, err
	}
	d := &Decoder{
		schema:  record.Schema{Columns: append([]record.Column(nil), s.Columns...)},
		layout:  l,
		maxBody: cfg.MaxBodyBytes,
		columns: make([]columnReader, len(s.Columns)),
		rows:    rows,
	}
	for i, c := range d.schema.Columns {
		d.columns[i].col = c
	}
	return d, nil
}

// Validate checks a payload of recordCount records from an untrusted
// source (a produce request): its structure, and every value as strictly
// as record.ValidateRow checks rows. Errors match ErrInvalidPayload (or
// ErrBodyTooLarge); no payload makes it panic, and it allocates at most
// MaxBodyBytes for the inflated buffers plus one row.
func (d *Decoder) Validate(payload []byte, recordCount int) error {
	return d.Rows(payload, recordCount, nil)
}

// Rows decodes every record of a payload of recordCount records into the
// row format and calls fn with each (when fn is not nil), in order. The row
// is valid until fn returns. Rows checks what Validate checks, stopping at
// the first error, which is fn's if fn fails.
func (d *Decoder) Rows(payload []byte, recordCount int, fn func(i int, row []byte) error) error {
	if err := d.open(payload, recordCount); err != nil {
		return err
	}
	for i := range recordCount {
		for c := range d.columns {
			d.columns[c].set(d.rows, c, i)
		}
		var err error
		if d.row, err = d.rows.Finish(d.row[:0]); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrInvalidPayload, i, err)
		}
		if fn != nil {
			if err := fn(i, d.row); err != nil {
				return err
			}
		}
	}
	return nil
}

// open reads the structure of a payload and points every column reader at
// its buffers, checking everything but the values themselves.
func (d *Decoder) open(payload []byte, recordCount int) error {
	body, err := parseMessage(payload, &d.meta)
	if err != nil {
		return err
	}
	m := &d.meta
	switch {
	case recordCount < 1:
		return invalidf("record count %d", recordCount)
	case m.length != int64(recordCount):
		return invalidf("record batch of %d records, the batch header says %d", m.length, recordCount)
	case len(m.nodes) != d.layout.nodes:
		return invalidf("%d field nodes, the schema's %d columns take %d", len(m.nodes), len(d.columns), d.layout.nodes)
	case len(m.buffers) != d.layout.buffers:
		return invalidf("%d buffers, the schema's %d columns take %d", len(m.buffers), len(d.columns), d.layout.buffers)
	}
	d.bufs = d.bufs[:0]
	if m.compressed {
		if d.bufs, err = d.inflate.inflate(m, body, d.maxBody, d.bufs); err != nil {
			return err
		}
	} else {
		for _, ref := range m.buffers {
			d.bufs = append(d.bufs, body[ref.offset:ref.offset+ref.length])
		}
	}
	for c, cl := range d.layout.columns {
		r := &d.columns[c]
		if err := r.open(m.nodes[cl.firstNode], m.length, d.bufs[cl.firstBuffer:cl.firstBuffer+cl.buffers]); err != nil {
			return fmt.Errorf("column %q: %w", r.col.Name, err)
		}
	}
	return nil
}

// columnReader reads one column's values out of its Arrow buffers. A
// nested type would add children here, each a columnReader.
type columnReader struct {
	col      record.Column
	validity []byte // nil when nothing is null
	values   []byte
	offsets  []byte // int32 offsets of STRING and BYTES values
	scratch  [16]byte
}

// open checks the column's node and buffers for a batch of n records.
func (r *columnReader) open(node fieldNode, n int64, bufs [][]byte) error {
	switch {
	case node.length != n:
		return invalidf("field node of %d records in a batch of %d", node.length, n)
	case node.nullCount < 0 || node.nullCount > n:
		return invalidf("%d nulls in %d records", node.nullCount, n)
	case node.nullCount > 0 && !r.col.Nullable:
		return fmt.Errorf("%w: %d nulls in a NOT NULL column: %w", ErrInvalidPayload, node.nullCount, record.ErrNullNotAllowed)
	}
	r.validity, r.values, r.offsets = bufs[0], bufs[len(bufs)-1], nil
	if len(r.validity) > 0 || node.nullCount > 0 {
		if int64(len(r.validity)) < (n+7)/8 {
			return invalidf("validity bitmap of %d bytes for %d records", len(r.validity), n)
		}
		if unset := n - countOnes(r.validity, n); unset != node.nullCount {
			return invalidf("validity bitmap has %d nulls, the field node says %d", unset, node.nullCount)
		}
	}
	if node.nullCount == 0 {
		r.validity = nil
	}
	switch k := r.col.Type.Kind(); k {
	case record.KindBoolean:
		if int64(len(r.values)) < (n+7)/8 {
			return invalidf("BOOLEAN values of %d bytes for %d records", len(r.values), n)
		}
	case record.KindString, record.KindBytes:
		r.offsets = bufs[1]
		return checkOffsets(r.offsets, n, len(r.values))
	default:
		if width := int64(fixedWidth(r.col.Type)); int64(len(r.values))/width < n {
			return invalidf("%v values of %d bytes for %d records", r.col.Type, len(r.values), n)
		}
	}
	return nil
}

// countOnes counts the set bits among the first n of bitmap.
func countOnes(bitmap []byte, n int64) int64 {
	var ones int
	full := n / 8
	for _, b := range bitmap[:full] {
		ones += bits.OnesCount8(b)
	}
	if rest := n % 8; rest != 0 {
		ones += bits.OnesCount8(bitmap[full] & (1<<rest - 1))
	}
	return int64(ones)
}

// checkOffsets checks the n+1 int32 offsets of variable-length values:
// from zero or more, never decreasing, up to at most dataBytes.
func checkOffsets(offsets []byte, n int64, dataBytes int) error {
	if int64(len(offsets))/4 < n+1 {
		return invalidf("offsets of %d bytes for %d records", len(offsets), n)
	}
	prev := int32(binary.LittleEndian.Uint32(offsets))
	if prev < 0 {
		return invalidf("first offset %d", prev)
	}
	for i := int64(1); i <= n; i++ {
		off := int32(binary.LittleEndian.Uint32(offsets[4*i:]))
		if off < prev {
			return invalidf("offset %d of record %d is before the previous %d", off, i-1, prev)
		}
		prev = off
	}
	if int(prev) > dataBytes {
		return invalidf("last offset %d past the %d bytes of values", prev, dataBytes)
	}
	return nil
}

// set sets column c of the row being built to the value of record i.
func (r *columnReader) set(e *record.RowEncoder, c, i int) {
	if r.validity != nil && r.validity[i/8]&(1<<(i%8)) == 0 {
		e.SetNull(c)
		return
	}
	v := r.values
	switch r.col.Type.Kind() {
	case record.KindBoolean:
		e.SetBool(c, v[i/8]&(1<<(i%8)) != 0)
	case record.KindTinyInt:
		e.SetInt64(c, int64(int8(v[i])))
	case record.KindSmallInt:
		e.SetInt64(c, int64(int16(binary.LittleEndian.Uint16(v[2*i:]))))
	case record.KindInt, record.KindDate, record.KindTime:
		e.SetInt64(c, int64(int32(binary.LittleEndian.Uint32(v[4*i:]))))
	case record.KindBigInt:
		e.SetInt64(c, int64(binary.LittleEndian.Uint64(v[8*i:])))
	case record.KindFloat:
		e.SetFloat32(c, math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:])))
	case record.KindDouble:
		e.SetFloat64(c, math.Float64frombits(binary.LittleEndian.Uint64(v[8*i:])))
	case record.KindDecimal:
		r.setDecimal(e, c, v[16*i:16*i+16])
	case record.KindString:
		e.SetStringBytes(c, r.varlen(i))
	case record.KindBytes:
		e.SetBytes(c, r.varlen(i))
	case record.KindTimestamp, record.KindTimestampLTZ:
		t := int64(binary.LittleEndian.Uint64(v[8*i:]))
		if r.col.Type.Precision() <= record.MaxCompactTimestampPrecision {
			millis, micros := floorDivMod(t, 1000)
			e.SetTimestamp(c, millis, int32(micros*1000))
		} else {
			millis, nanos := floorDivMod(t, nanosPerMilli)
			e.SetTimestamp(c, millis, int32(nanos))
		}
	}
}

// varlen is the STRING or BYTES value of record i.
func (r *columnReader) varlen(i int) []byte {
	start := binary.LittleEndian.Uint32(r.offsets[4*i:])
	end := binary.LittleEndian.Uint32(r.offsets[4*i+4:])
	return r.values[start:end]
}

// setDecimal sets a DECIMAL from a decimal128's 16 little-endian bytes.
func (r *columnReader) setDecimal(e *record.RowEncoder, c int, le []byte) {
	lo, hi := binary.LittleEndian.Uint64(le), binary.LittleEndian.Uint64(le[8:])
	if int64(hi) == int64(lo)>>63 {
		e.SetDecimal(c, int64(lo))
		return
	}
	for k := range 16 {
		r.scratch[k] = le[15-k]
	}
	e.SetDecimalBytes(c, r.scratch[:])
}

// floorDivMod returns the quotient rounded toward minus infinity and the
// matching non-negative remainder, for b > 0.
func floorDivMod(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}
