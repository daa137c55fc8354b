package arrowlog

import (
	"encoding/binary"
	"fmt"
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
		if d.columns[i], err = newColumnReader(c.Name, c); err != nil {
			return nil, err
		}
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
	d.rows.Reset()
	for i := range recordCount {
		for c := range d.columns {
			if err := readValue(&d.columns[c], rowSink{d.rows, c}, i); err != nil {
				d.rows.Reset()
				return fmt.Errorf("%w: record %d: %w", ErrInvalidPayload, i, err)
			}
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
	cur := cursor{nodes: m.nodes, bufs: d.bufs}
	for c := range d.columns {
		r := &d.columns[c]
		if err := r.open(&cur, m.length, true); err != nil {
			return fmt.Errorf("column %q: %w", r.name, err)
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
