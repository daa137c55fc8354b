package arrowlog

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/floedb/floe/storage/record"
)

// columnCheck follows the values of one column (or child) that Append
// may refuse: STRING and BYTES bytes (2 GiB per batch, Arrow's int32
// offsets) and timestamps in nanoseconds. Its children mirror the type's:
// the list's element, the map's entries (whose children are the key and
// the value), the struct's fields.
type columnCheck struct {
	name     string // the column's, or a path into it for a child
	typ      record.DataType
	children []columnCheck
	// valueBytes counts the STRING or BYTES bytes of the batch, pending
	// those of the row being checked.
	valueBytes, pending int
}

// newColumnCheck returns the check of column c (a child named name).
func newColumnCheck(name string, c record.Column) columnCheck {
	b := columnCheck{name: name, typ: c.Type}
	switch c.Type.Kind() {
	case record.KindArray:
		b.children = []columnCheck{newColumnCheck(name+"."+elementName, c.Type.Elem())}
	case record.KindMap:
		key, value := c.Type.MapKey(), c.Type.MapValue()
		entries := columnCheck{name: name, typ: record.Row([]record.Column{key, value})}
		entries.children = []columnCheck{newColumnCheck(name+"."+key.Name, key), newColumnCheck(name+"."+value.Name, value)}
		b.children = []columnCheck{entries}
	case record.KindRow:
		for _, f := range c.Type.Fields() {
			b.children = append(b.children, newColumnCheck(name+"."+f.Name, f))
		}
	}
	return b
}

// commit adds the pending bytes of a row appended (accepted) to the
// batch's; reset forgets the batch.
func (b *columnCheck) commit(accepted bool) {
	if accepted {
		b.valueBytes += b.pending
	}
	b.pending = 0
	for i := range b.children {
		b.children[i].commit(accepted)
	}
}

func (b *columnCheck) reset() {
	b.valueBytes, b.pending = 0, 0
	for i := range b.children {
		b.children[i].reset()
	}
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
func checkValue[V valueSource](b *columnCheck, v V, i int) error {
	if v.IsNull(i) {
		return nil
	}
	switch b.typ.Kind() {
	case record.KindString, record.KindBytes:
		b.pending += len(v.Bytes(i))
		if b.valueBytes+b.pending > math.MaxInt32 {
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

// appendValue appends value i of v, which checkValue accepted, to b, a
// builder of the value's Arrow type, and returns about how many bytes of
// buffers it takes (SizeEstimate).
func appendValue[V valueSource](b array.Builder, typ record.DataType, v V, i int) int {
	if v.IsNull(i) {
		b.AppendNull()
		return 0
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.Bool(i))
		return 0
	case *array.Int8Builder:
		b.Append(int8(v.Int64(i)))
		return 1
	case *array.Int16Builder:
		b.Append(int16(v.Int64(i)))
		return 2
	case *array.Int32Builder:
		b.Append(int32(v.Int64(i)))
		return 4
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.Int64(i)))
		return 4
	case *array.Time32Builder:
		b.Append(arrow.Time32(v.Int64(i)))
		return 4
	case *array.Int64Builder:
		b.Append(v.Int64(i))
		return 8
	case *array.Float32Builder:
		b.Append(v.Float32(i))
		return 4
	case *array.Float64Builder:
		b.Append(v.Float64(i))
		return 8
	case *array.Decimal128Builder:
		b.Append(decimalOf(v, i))
		return 16
	case *array.StringBuilder:
		p := v.Bytes(i)
		b.BinaryBuilder.Append(p)
		return 4 + len(p)
	case *array.BinaryBuilder:
		p := v.Bytes(i)
		b.Append(p)
		return 4 + len(p)
	case *array.TimestampBuilder:
		millis, nanos := v.Timestamp(i)
		if typ.Precision() <= record.MaxCompactTimestampPrecision {
			b.Append(arrow.Timestamp(millis*1000 + int64(nanos/1000)))
		} else {
			ns, _ := nanosSinceEpoch(millis, nanos)
			b.Append(arrow.Timestamp(ns))
		}
		return 8
	case *array.MapBuilder: // a map's is not a ListBuilder
		b.Append(true)
		m, keys, items := v.Map(i), b.KeyBuilder(), b.ItemBuilder()
		size := 4
		for j := range m.Len() {
			size += appendValue(keys, typ.MapKey().Type, m.Keys(), j)
			size += appendValue(items, typ.MapValue().Type, m.Values(), j)
		}
		return size
	case *array.ListBuilder:
		b.Append(true)
		a, elems := v.Array(i), b.ValueBuilder()
		size := 4
		for j := range a.Len() {
			size += appendValue(elems, typ.Elem().Type, a, j)
		}
		return size
	case *array.StructBuilder:
		b.Append(true)
		r, size := v.Row(i), 0
		for f, field := range typ.Fields() {
			size += appendValue(b.FieldBuilder(f), field.Type, r, f)
		}
		return size
	}
	panic("arrowlog: no Arrow builder for " + typ.String()) // NewEncoder refused the type
}

// decimalOf is the DECIMAL value i of v as a decimal128.
func decimalOf[V valueSource](v V, i int) decimal128.Num {
	if unscaled, ok := v.DecimalInt64(i); ok {
		return decimal128.FromI64(unscaled)
	}
	// Big-endian two's complement of 1 to 16 bytes, sign-extended.
	var be [16]byte
	b := v.AppendDecimalBytes(be[:0:16], i)
	var full [16]byte
	if len(b) > 0 && b[0]&0x80 != 0 {
		full = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	copy(full[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(full[:8])), binary.BigEndian.Uint64(full[8:]))
}
