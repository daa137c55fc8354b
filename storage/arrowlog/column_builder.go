package arrowlog

import (
	"fmt"
	"math"

	"github.com/floedb/floe/storage/record"
)

// columnBuilder accumulates one column's Arrow buffers, or one child's of a
// nested column: a validity bitmap, then the values (fixed-width, or
// boolean bits), and for STRING, BYTES, ARRAY and MAP the int32 offsets
// before them, in the order of the type's Arrow layout. ARRAY, MAP and ROW
// have children: the list's element, the map's entries struct (whose
// children are the key and the value), the struct's fields.
type columnBuilder struct {
	name     string // the column's, or a path into it for a child
	typ      record.DataType
	validity []byte
	nulls    int
	length   int
	values   []byte
	offsets  []byte // STRING, BYTES, ARRAY and MAP only
	scratch  []byte // a DECIMAL's big-endian bytes
	children []columnBuilder
	// pending counts the STRING or BYTES bytes of the row being checked,
	// which an array may hold many of.
	pending int
}

// newColumnBuilder returns the builder of column c (a child named name).
func newColumnBuilder(name string, c record.Column) columnBuilder {
	b := columnBuilder{name: name, typ: c.Type}
	switch c.Type.Kind() {
	case record.KindArray:
		elem := c.Type.Elem()
		b.children = []columnBuilder{newColumnBuilder(name+"."+elementName, elem)}
	case record.KindMap:
		key, value := c.Type.MapKey(), c.Type.MapValue()
		// The entries struct, never null, of the key and the value.
		entries := columnBuilder{name: name, typ: record.Row([]record.Column{key, value})}
		entries.children = []columnBuilder{
			newColumnBuilder(name+"."+key.Name, key),
			newColumnBuilder(name+"."+value.Name, value),
		}
		entries.reset()
		b.children = []columnBuilder{entries}
	case record.KindRow:
		for _, f := range c.Type.Fields() {
			b.children = append(b.children, newColumnBuilder(name+"."+f.Name, f))
		}
	}
	b.reset()
	return b
}

func (b *columnBuilder) reset() {
	b.validity, b.values, b.nulls, b.length = b.validity[:0], b.values[:0], 0, 0
	if b.hasOffsets() {
		b.offsets = append(b.offsets[:0], 0, 0, 0, 0)
	}
	for i := range b.children {
		b.children[i].reset()
	}
}

func (b *columnBuilder) resetPending() {
	b.pending = 0
	for i := range b.children {
		b.children[i].resetPending()
	}
}

func (b *columnBuilder) hasOffsets() bool {
	switch b.typ.Kind() {
	case record.KindString, record.KindBytes, record.KindArray, record.KindMap:
		return true
	}
	return false
}

func (b *columnBuilder) size() int {
	size := len(b.validity) + len(b.values) + len(b.offsets)
	for i := range b.children {
		size += b.children[i].size()
	}
	return size
}

// appendBuffers appends the field nodes and buffers of the column and of
// its children, depth first, to nodes and bufs; a validity bitmap is left
// empty when nothing is null, as Arrow allows.
func (b *columnBuilder) appendBuffers(nodes []fieldNode, bufs [][]byte) ([]fieldNode, [][]byte) {
	nodes = append(nodes, fieldNode{length: int64(b.length), nullCount: int64(b.nulls)})
	validity := b.validity
	if b.nulls == 0 {
		validity = nil
	}
	switch b.typ.Kind() {
	case record.KindString, record.KindBytes:
		bufs = append(bufs, validity, b.offsets, b.values)
	case record.KindArray, record.KindMap:
		bufs = append(bufs, validity, b.offsets)
	case record.KindRow:
		bufs = append(bufs, validity)
	default:
		bufs = append(bufs, validity, b.values)
	}
	for i := range b.children {
		nodes, bufs = b.children[i].appendBuffers(nodes, bufs)
	}
	return nodes, bufs
}

// valueSource is where values come from: a row (record.RowView) or the
// elements of an array (record.ArrayView), which have the same getters.
type valueSource interface {
	IsNull(i int) bool
	Bool(i int) bool
	Int64(i int) int64
	Float32(i int) float32
	Float64(i int) float64
	Bytes(i int) []byte
	Timestamp(i int) (millis int64, nanosOfMilli int32)
	DecimalInt64(i int) (int64, bool)
	AppendDecimalBytes(dst []byte, i int) []byte
	Array(i int) record.ArrayView
	Map(i int) record.MapView
	Row(i int) record.RowView
}

// needsCheck reports whether values of t can be refused by Append: STRING
// and BYTES (2 GiB per batch) and timestamps in nanoseconds, at any depth.
func needsCheck(t record.DataType) bool {
	switch t.Kind() {
	case record.KindString, record.KindBytes:
		return true
	case record.KindTimestamp, record.KindTimestampLTZ:
		return t.Precision() > record.MaxCompactTimestampPrecision
	case record.KindArray:
		return needsCheck(t.Elem().Type)
	case record.KindMap:
		return needsCheck(t.MapKey().Type) || needsCheck(t.MapValue().Type)
	case record.KindRow:
		for _, f := range t.Fields() {
			if needsCheck(f.Type) {
				return true
			}
		}
	}
	return false
}

// checkValue reports what would make appendValue fail for value i of v.
func checkValue[V valueSource](b *columnBuilder, v V, i int) error {
	if v.IsNull(i) {
		return nil
	}
	switch b.typ.Kind() {
	case record.KindString, record.KindBytes:
		b.pending += len(v.Bytes(i))
		if len(b.values)+b.pending > math.MaxInt32 {
			return fmt.Errorf("%w: column %q", ErrColumnTooLarge, b.name)
		}
	case record.KindTimestamp, record.KindTimestampLTZ:
		if b.typ.Precision() > record.MaxCompactTimestampPrecision {
			if millis, nanos := v.Timestamp(i); !fitsNanos(millis, nanos) {
				return &TimestampRangeError{Column: b.name, Millis: millis, NanosOfMilli: nanos}
			}
		}
	case record.KindArray:
		a := v.Array(i)
		for j := range a.Len() {
			if err := checkValue(&b.children[0], a, j); err != nil {
				return err
			}
		}
	case record.KindMap:
		m, entries := v.Map(i), &b.children[0]
		for j := range m.Len() {
			if err := checkValue(&entries.children[0], m.Keys(), j); err != nil {
				return err
			}
			if err := checkValue(&entries.children[1], m.Values(), j); err != nil {
				return err
			}
		}
	case record.KindRow:
		r := v.Row(i)
		for f := range b.children {
			if err := checkValue(&b.children[f], r, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendValue adds value i of v, which checkValue accepted; a null takes
// the place of a zero value, an empty list or map, or a struct of empty
// values.
func appendValue[V valueSource](b *columnBuilder, v V, i int) {
	null := v.IsNull(i)
	b.validity = appendBit(b.validity, b.length, !null)
	if null {
		b.nulls++
	}
	switch b.typ.Kind() {
	case record.KindArray:
		if !null {
			a, elem := v.Array(i), &b.children[0]
			for j := range a.Len() {
				appendValue(elem, a, j)
			}
		}
		b.offsets = appendUint32(b.offsets, uint32(b.children[0].length))
	case record.KindMap:
		entries := &b.children[0]
		if !null {
			m := v.Map(i)
			for j := range m.Len() {
				entries.validity = appendBit(entries.validity, entries.length, true)
				entries.length++
				appendValue(&entries.children[0], m.Keys(), j)
				appendValue(&entries.children[1], m.Values(), j)
			}
		}
		b.offsets = appendUint32(b.offsets, uint32(entries.length))
	case record.KindRow:
		if null {
			for f := range b.children {
				b.children[f].appendEmpty()
			}
		} else {
			r := v.Row(i)
			for f := range b.children {
				appendValue(&b.children[f], r, f)
			}
		}
	default:
		b.values = appendFlat(b, b.values, v, i, null)
	}
	b.length++
}

// appendEmpty adds a value, not null, that stands under a null struct: a
// zero value, an empty list or map, a struct of empty values.
func (b *columnBuilder) appendEmpty() {
	b.validity = appendBit(b.validity, b.length, true)
	switch b.typ.Kind() {
	case record.KindArray, record.KindMap:
		b.offsets = appendUint32(b.offsets, uint32(b.children[0].length))
	case record.KindRow:
		for f := range b.children {
			b.children[f].appendEmpty()
		}
	case record.KindBoolean:
		b.values = appendBit(b.values, b.length, false)
	case record.KindString, record.KindBytes:
		b.offsets = appendUint32(b.offsets, uint32(len(b.values)))
	default:
		b.values = append(b.values, zeros[:fixedWidth(b.typ)]...)
	}
	b.length++
}

// appendFlat appends the Arrow form of value i of v, of a type that is not
// nested, to values; a null takes the place of a zero value.
func appendFlat[V valueSource](b *columnBuilder, values []byte, v V, i int, null bool) []byte {
	t := b.typ
	switch t.Kind() {
	case record.KindBoolean:
		return appendBit(values, b.length, !null && v.Bool(i))
	case record.KindString, record.KindBytes:
		if !null {
			values = append(values, v.Bytes(i)...)
		}
		b.offsets = appendUint32(b.offsets, uint32(len(values)))
		return values
	}
	if null {
		return append(values, zeros[:fixedWidth(t)]...)
	}
	switch t.Kind() {
	case record.KindTinyInt:
		return append(values, byte(v.Int64(i)))
	case record.KindSmallInt:
		return appendUint16(values, uint16(v.Int64(i)))
	case record.KindInt, record.KindDate, record.KindTime:
		return appendUint32(values, uint32(v.Int64(i)))
	case record.KindBigInt:
		return appendUint64(values, uint64(v.Int64(i)))
	case record.KindFloat:
		return appendUint32(values, math.Float32bits(v.Float32(i)))
	case record.KindDouble:
		return appendUint64(values, math.Float64bits(v.Float64(i)))
	case record.KindDecimal:
		return appendDecimal(b, values, v, i)
	case record.KindTimestamp, record.KindTimestampLTZ:
		millis, nanos := v.Timestamp(i)
		if t.Precision() <= record.MaxCompactTimestampPrecision {
			return appendUint64(values, uint64(millis*1000+int64(nanos/1000)))
		}
		ns, _ := nanosSinceEpoch(millis, nanos)
		return appendUint64(values, uint64(ns))
	}
	panic("arrowlog: no encoding for " + t.String()) // newLayout refused the type
}

// appendDecimal appends a decimal128: the unscaled value as 16 bytes of
// little-endian two's complement.
func appendDecimal[V valueSource](b *columnBuilder, values []byte, v V, i int) []byte {
	if unscaled, ok := v.DecimalInt64(i); ok {
		values = appendUint64(values, uint64(unscaled))
		return appendUint64(values, uint64(unscaled>>63))
	}
	// Big-endian two's complement of 1 to 16 bytes, sign-extended.
	b.scratch = v.AppendDecimalBytes(b.scratch[:0], i)
	var le [16]byte
	if len(b.scratch) > 0 && b.scratch[0]&0x80 != 0 {
		le = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	for k, c := range b.scratch {
		le[len(b.scratch)-1-k] = c
	}
	return append(values, le[:]...)
}
