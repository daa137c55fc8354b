package arrowlog

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/floedb/floe/storage/record"
)

// columnReader reads one column's values out of its Arrow buffers, or one
// child's of a nested column. ARRAY, MAP and ROW have children as
// columnBuilder has, and the record encoder that turns their values back
// into the row format.
type columnReader struct {
	name     string // the column's, or a path into it for a child
	typ      record.DataType
	nullable bool
	buffers  int    // of the type's Arrow layout
	validity []byte // nil when nothing is null
	values   []byte
	offsets  []byte // int32 offsets of STRING, BYTES, ARRAY and MAP values
	scratch  [16]byte
	children []columnReader

	array  *record.ArrayEncoder // ARRAY
	mapEnc *record.MapEncoder   // MAP
	fields *record.RowEncoder   // ROW
	nested []byte               // the value they encode
}

// newColumnReader returns the reader of column c (a child named name).
func newColumnReader(name string, c record.Column) (columnReader, error) {
	t, err := arrowType(c.Type)
	if err != nil {
		return columnReader{}, fmt.Errorf("column %q: %w", name, err)
	}
	r := columnReader{name: name, typ: c.Type, nullable: c.Nullable, buffers: len(t.Layout().Buffers)}
	var children []record.Column
	switch c.Type.Kind() {
	case record.KindArray:
		elem := c.Type.Elem()
		children = []record.Column{elem}
		r.array, err = record.NewArrayEncoder(elem.Type, elem.Nullable)
	case record.KindMap:
		key, value := c.Type.MapKey(), c.Type.MapValue()
		// The entries struct, never null, of the key and the value.
		children = []record.Column{{Name: "entries", Type: record.Row([]record.Column{key, value})}}
		r.mapEnc, err = record.NewMapEncoder(key.Type, value.Type, value.Nullable)
	case record.KindRow:
		children = c.Type.Fields()
		r.fields, err = record.NewRowValueEncoder(children)
	}
	if err != nil {
		return columnReader{}, err
	}
	for _, child := range children {
		cr, err := newColumnReader(name+"."+child.Name, child)
		if err != nil {
			return columnReader{}, err
		}
		if c.Type.Kind() == record.KindMap {
			// The entries struct has no encoder of its own: the map's
			// reads its key and value.
			cr.fields = nil
		}
		r.children = append(r.children, cr)
	}
	return r, nil
}

// cursor hands out the field nodes and buffers of a payload's columns in
// the order the IPC format lays them out: each column's, then its
// children's, depth first. The payload's counts were checked against the
// schema's layout, so it never runs out.
type cursor struct {
	nodes []fieldNode
	bufs  [][]byte
}

func (c *cursor) next(buffers int) (fieldNode, [][]byte) {
	node, bufs := c.nodes[0], c.bufs[:buffers]
	c.nodes, c.bufs = c.nodes[1:], c.bufs[buffers:]
	return node, bufs
}

// open checks the node and buffers of the column (top) or child and its
// children's, for n values: a column has exactly the batch's records, a
// child at least as many values as its parent refers to.
func (r *columnReader) open(cur *cursor, n int64, top bool) error {
	node, bufs := cur.next(r.buffers)
	switch {
	case top && node.length != n:
		return invalidf("field node of %d records in a batch of %d", node.length, n)
	case node.length < n:
		return invalidf("%s: %d values where its parent refers to %d", r.name, node.length, n)
	case node.nullCount < 0 || node.nullCount > node.length:
		return invalidf("%s: %d nulls in %d values", r.name, node.nullCount, node.length)
	case top && node.nullCount > 0 && !r.nullable:
		return fmt.Errorf("%w: %d nulls in a NOT NULL column: %w", ErrInvalidPayload, node.nullCount, record.ErrNullNotAllowed)
	}
	n = node.length
	r.validity, r.values, r.offsets = bufs[0], bufs[len(bufs)-1], nil
	if len(r.validity) > 0 || node.nullCount > 0 {
		if int64(len(r.validity)) < (n+7)/8 {
			return invalidf("%s: validity bitmap of %d bytes for %d values", r.name, len(r.validity), n)
		}
		if unset := n - countOnes(r.validity, n); unset != node.nullCount {
			return invalidf("%s: validity bitmap has %d nulls, the field node says %d", r.name, unset, node.nullCount)
		}
	}
	if node.nullCount == 0 {
		r.validity = nil
	}
	switch k := r.typ.Kind(); k {
	case record.KindBoolean:
		if int64(len(r.values)) < (n+7)/8 {
			return invalidf("%s: BOOLEAN values of %d bytes for %d values", r.name, len(r.values), n)
		}
	case record.KindString, record.KindBytes:
		r.offsets = bufs[1]
		return checkOffsets(r.offsets, n, len(r.values))
	case record.KindArray, record.KindMap:
		r.offsets, r.values = bufs[1], nil
		if err := checkOffsets(r.offsets, n, math.MaxInt32); err != nil {
			return err
		}
		child := &r.children[0]
		if err := child.open(cur, int64(binary.LittleEndian.Uint32(r.offsets[4*n:])), false); err != nil {
			return err
		}
		if k == record.KindMap && child.validity != nil {
			return invalidf("%s: null map entries", r.name)
		}
	case record.KindRow:
		r.values = nil
		for f := range r.children {
			if err := r.children[f].open(cur, n, false); err != nil {
				return err
			}
		}
	default:
		if width := int64(fixedWidth(r.typ)); int64(len(r.values))/width < n {
			return invalidf("%s: %v values of %d bytes for %d values", r.name, r.typ, len(r.values), n)
		}
	}
	return nil
}

// valueSink is where a value read goes: a column of a row (rowSink) or
// the next element of an array (arraySink).
type valueSink interface {
	setNull()
	setBool(v bool)
	setInt64(v int64)
	setFloat32(v float32)
	setFloat64(v float64)
	setDecimal(unscaled int64)
	setDecimalBytes(unscaled []byte)
	setString(v []byte)
	setBytes(v []byte)
	setTimestamp(millis int64, nanosOfMilli int32)
	setNested(encoded []byte)
}

// rowSink sets column c of the row e builds.
type rowSink struct {
	e *record.RowEncoder
	c int
}

func (s rowSink) setNull()                        { s.e.SetNull(s.c) }
func (s rowSink) setBool(v bool)                  { s.e.SetBool(s.c, v) }
func (s rowSink) setInt64(v int64)                { s.e.SetInt64(s.c, v) }
func (s rowSink) setFloat32(v float32)            { s.e.SetFloat32(s.c, v) }
func (s rowSink) setFloat64(v float64)            { s.e.SetFloat64(s.c, v) }
func (s rowSink) setDecimal(unscaled int64)       { s.e.SetDecimal(s.c, unscaled) }
func (s rowSink) setDecimalBytes(unscaled []byte) { s.e.SetDecimalBytes(s.c, unscaled) }
func (s rowSink) setString(v []byte)              { s.e.SetStringBytes(s.c, v) }
func (s rowSink) setBytes(v []byte)               { s.e.SetBytes(s.c, v) }
func (s rowSink) setTimestamp(millis int64, nanos int32) {
	s.e.SetTimestamp(s.c, millis, nanos)
}
func (s rowSink) setNested(encoded []byte) { s.e.SetNested(s.c, encoded) }

// arraySink appends elements to the array a builds.
type arraySink struct{ a *record.ArrayEncoder }

func (s arraySink) setNull()                        { s.a.AppendNull() }
func (s arraySink) setBool(v bool)                  { s.a.AppendBool(v) }
func (s arraySink) setInt64(v int64)                { s.a.AppendInt64(v) }
func (s arraySink) setFloat32(v float32)            { s.a.AppendFloat32(v) }
func (s arraySink) setFloat64(v float64)            { s.a.AppendFloat64(v) }
func (s arraySink) setDecimal(unscaled int64)       { s.a.AppendDecimal(unscaled) }
func (s arraySink) setDecimalBytes(unscaled []byte) { s.a.AppendDecimalBytes(unscaled) }
func (s arraySink) setString(v []byte)              { s.a.AppendStringBytes(v) }
func (s arraySink) setBytes(v []byte)               { s.a.AppendBytes(v) }
func (s arraySink) setTimestamp(millis int64, nanos int32) {
	s.a.AppendTimestamp(millis, nanos)
}
func (s arraySink) setNested(encoded []byte) { s.a.AppendNested(encoded) }

// readValue gives value i of r to s. Errors are those of building a
// nested value (record's, about a value); the others the encoders behind
// the sinks keep until their Finish.
func readValue[S valueSink](r *columnReader, s S, i int) error {
	if r.validity != nil && r.validity[i/8]&(1<<(i%8)) == 0 {
		s.setNull()
		return nil
	}
	v := r.values
	switch r.typ.Kind() {
	case record.KindBoolean:
		s.setBool(v[i/8]&(1<<(i%8)) != 0)
	case record.KindTinyInt:
		s.setInt64(int64(int8(v[i])))
	case record.KindSmallInt:
		s.setInt64(int64(int16(binary.LittleEndian.Uint16(v[2*i:]))))
	case record.KindInt, record.KindDate, record.KindTime:
		s.setInt64(int64(int32(binary.LittleEndian.Uint32(v[4*i:]))))
	case record.KindBigInt:
		s.setInt64(int64(binary.LittleEndian.Uint64(v[8*i:])))
	case record.KindFloat:
		s.setFloat32(math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:])))
	case record.KindDouble:
		s.setFloat64(math.Float64frombits(binary.LittleEndian.Uint64(v[8*i:])))
	case record.KindDecimal:
		readDecimal(r, s, v[16*i:16*i+16])
	case record.KindString:
		start, end := r.span(i)
		s.setString(v[start:end])
	case record.KindBytes:
		start, end := r.span(i)
		s.setBytes(v[start:end])
	case record.KindTimestamp, record.KindTimestampLTZ:
		t := int64(binary.LittleEndian.Uint64(v[8*i:]))
		if r.typ.Precision() <= record.MaxCompactTimestampPrecision {
			millis, micros := floorDivMod(t, 1000)
			s.setTimestamp(millis, int32(micros*1000))
		} else {
			millis, nanos := floorDivMod(t, nanosPerMilli)
			s.setTimestamp(millis, int32(nanos))
		}
	case record.KindArray, record.KindMap, record.KindRow:
		encoded, err := r.readNested(i)
		if err != nil {
			return err
		}
		s.setNested(encoded)
	}
	return nil
}

// readNested encodes nested value i in the row format.
func (r *columnReader) readNested(i int) ([]byte, error) {
	var err error
	switch r.typ.Kind() {
	case record.KindArray:
		start, end := r.span(i)
		for j := start; j < end; j++ {
			if err := readValue(&r.children[0], arraySink{r.array}, j); err != nil {
				r.array.Reset()
				return nil, err
			}
		}
		r.nested, err = r.array.Finish(r.nested[:0])
	case record.KindMap:
		start, end := r.span(i)
		entries := &r.children[0]
		for j := start; j < end; j++ {
			if err := readValue(&entries.children[0], arraySink{r.mapEnc.Keys()}, j); err != nil {
				r.mapEnc.Reset()
				return nil, err
			}
			if err := readValue(&entries.children[1], arraySink{r.mapEnc.Values()}, j); err != nil {
				r.mapEnc.Reset()
				return nil, err
			}
		}
		r.nested, err = r.mapEnc.Finish(r.nested[:0])
	default:
		for f := range r.children {
			if err := readValue(&r.children[f], rowSink{r.fields, f}, i); err != nil {
				r.fields.Reset()
				return nil, err
			}
		}
		r.nested, err = r.fields.Finish(r.nested[:0])
	}
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", r.name, err)
	}
	return r.nested, nil
}

// span is where value i of a STRING, BYTES, ARRAY or MAP reader starts and
// ends: in its values, or in its child's.
func (r *columnReader) span(i int) (start, end int) {
	return int(binary.LittleEndian.Uint32(r.offsets[4*i:])), int(binary.LittleEndian.Uint32(r.offsets[4*i+4:]))
}

// readDecimal gives a DECIMAL from a decimal128's 16 little-endian bytes.
func readDecimal[S valueSink](r *columnReader, s S, le []byte) {
	lo, hi := binary.LittleEndian.Uint64(le), binary.LittleEndian.Uint64(le[8:])
	if int64(hi) == int64(lo)>>63 {
		s.setDecimal(int64(lo))
		return
	}
	for k := range 16 {
		r.scratch[k] = le[15-k]
	}
	s.setDecimalBytes(r.scratch[:])
}
