package lake

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fieldIDKey is the Arrow field metadata key pqarrow writes as a Parquet
// field id, which Iceberg readers match columns by.
const fieldIDKey = "PARQUET:field_id"

// ArrowSchema is the Arrow schema of the lake's Parquet files of s: each
// field (nested ones too) carries its Iceberg id.
func ArrowSchema(s Schema) (*arrow.Schema, error) {
	fields, err := arrowFields(s.Fields)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowFields(fs []Field) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(fs))
	for i, f := range fs {
		af, err := arrowField(f)
		if err != nil {
			return nil, err
		}
		out[i] = af
	}
	return out, nil
}

func arrowField(f Field) (arrow.Field, error) {
	t, err := arrowType(f.Type)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("field %s: %w", f.Name, err)
	}
	return arrow.Field{Name: f.Name, Type: t, Nullable: !f.Required,
		Metadata: arrow.NewMetadata([]string{fieldIDKey}, []string{strconv.Itoa(f.ID)})}, nil
}

// arrowType is the Arrow type Iceberg's Parquet mapping reads as t.
func arrowType(t Type) (arrow.DataType, error) {
	switch {
	case t.Element != nil:
		e, err := arrowField(*t.Element)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(e), nil
	case t.Key != nil && t.Value != nil:
		k, err := arrowField(*t.Key)
		if err != nil {
			return nil, err
		}
		v, err := arrowField(*t.Value)
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(k, v), nil
	case t.Struct:
		fs, err := arrowFields(t.Fields)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fs...), nil
	}
	switch t.Primitive {
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "time":
		return arrow.FixedWidthTypes.Time64us, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	}
	var p, s int32
	if _, err := fmt.Sscanf(t.Primitive, "decimal(%d, %d)", &p, &s); err == nil {
		return &arrow.Decimal128Type{Precision: p, Scale: s}, nil
	}
	return nil, fmt.Errorf("%w: Iceberg type %q", ErrUnsupported, t.Primitive)
}

// castColumn turns a column of a log batch (arrowlog's Arrow types) into
// the lake's type to: TINYINT and SMALLINT widen to int32, TIME and
// TIMESTAMP become microseconds (nanoseconds round down), at any depth;
// and a column read from a data file back into a log batch's type (int32
// narrowed, microseconds to TIME's milliseconds, rounding down, or to a
// TIMESTAMP(7..9)'s nanoseconds). A column of the same type is shared,
// not copied. The caller releases the result.
func castColumn(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if _, nested := to.(arrow.NestedType); !nested && sameLayout(a.DataType(), to) {
		data := array.NewData(to, a.Len(), a.Data().Buffers(), a.Data().Children(), a.NullN(), a.Data().Offset())
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	switch src := a.(type) {
	case *array.Int8:
		return widenInt32(mem, src.Len(), src.IsNull, func(i int) int32 { return int32(src.Value(i)) }), nil
	case *array.Int16:
		return widenInt32(mem, src.Len(), src.IsNull, func(i int) int32 { return int32(src.Value(i)) }), nil
	case *array.Int32:
		return narrowInt32(mem, src, to)
	case *array.Time64:
		if src.DataType().(*arrow.Time64Type).Unit != arrow.Microsecond {
			return nil, fmt.Errorf("%w: no cast from %v to %v", ErrUnsupported, a.DataType(), to)
		}
		return fill(array.NewTime32Builder(mem, arrow.FixedWidthTypes.Time32ms.(*arrow.Time32Type)), src.Len(), src.IsNull,
			func(i int) arrow.Time32 { return arrow.Time32(floorDiv(int64(src.Value(i)), 1000)) }), nil
	case *array.Time32:
		return fill(array.NewTime64Builder(mem, arrow.FixedWidthTypes.Time64us.(*arrow.Time64Type)), src.Len(), src.IsNull,
			func(i int) arrow.Time64 { return arrow.Time64(int64(src.Value(i)) * 1000) }), nil // TIME is milliseconds
	case *array.Timestamp:
		from, want := src.DataType().(*arrow.TimestampType).Unit, to.(*arrow.TimestampType).Unit
		switch {
		case from == arrow.Microsecond && want == arrow.Nanosecond:
			return widenTimestamp(mem, src, to.(*arrow.TimestampType))
		case from == arrow.Nanosecond && want == arrow.Microsecond:
			// Rounded toward the past, as the time line goes.
			return fill(array.NewTimestampBuilder(mem, to.(*arrow.TimestampType)), src.Len(), src.IsNull,
				func(i int) arrow.Timestamp { return arrow.Timestamp(floorDiv(int64(src.Value(i)), 1000)) }), nil
		}
		return nil, fmt.Errorf("%w: no cast from %v to %v", ErrUnsupported, a.DataType(), to)
	case *array.List:
		return castNested(mem, a, to, []arrow.Array{src.ListValues()}, []arrow.DataType{to.(*arrow.ListType).Elem()})
	case *array.Map:
		mt := to.(*arrow.MapType)
		return castNested(mem, a, to, []arrow.Array{src.ListValues()}, []arrow.DataType{mt.Elem()})
	case *array.Struct:
		st := to.(*arrow.StructType)
		// The children as they are stored, not as Field gives them (cut
		// to a sliced struct's rows): the struct keeps its offset.
		kids := make([]arrow.Array, src.NumField())
		types := make([]arrow.DataType, src.NumField())
		for i := range kids {
			kids[i], types[i] = array.MakeFromData(src.Data().Children()[i]), st.Field(i).Type
			defer kids[i].Release()
		}
		return castNested(mem, a, to, kids, types)
	}
	return nil, fmt.Errorf("%w: no cast from %v to %v", ErrUnsupported, a.DataType(), to)
}

// castNested casts a nested column's children and keeps its own buffers
// (validity, offsets).
func castNested(mem memory.Allocator, a arrow.Array, to arrow.DataType, kids []arrow.Array, types []arrow.DataType) (arrow.Array, error) {
	data := make([]arrow.ArrayData, len(kids))
	for i, k := range kids {
		c, err := castColumn(mem, k, types[i])
		if err != nil {
			for _, d := range data[:i] {
				d.Release()
			}
			return nil, err
		}
		data[i] = c.Data()
		data[i].Retain()
		c.Release()
	}
	out := array.NewData(to, a.Len(), a.Data().Buffers(), data, a.NullN(), a.Data().Offset())
	for _, d := range data {
		d.Release()
	}
	defer out.Release()
	return array.MakeFromData(out), nil
}

// sameLayout: two types of one primitive layout, the same values in the
// same buffers (they may differ in a time zone or in metadata).
func sameLayout(a, b arrow.DataType) bool {
	if a.ID() != b.ID() {
		return false
	}
	switch at := a.(type) {
	case *arrow.TimestampType:
		return at.Unit == b.(*arrow.TimestampType).Unit
	case *arrow.Time32Type, *arrow.Time64Type, *arrow.Decimal128Type:
		return arrow.TypeEqual(a, b)
	}
	return true
}

func widenInt32(mem memory.Allocator, n int, isNull func(int) bool, value func(int) int32) arrow.Array {
	return fill(array.NewInt32Builder(mem), n, isNull, value)
}

// narrowInt32 is a data file's int column read back as the TINYINT or
// SMALLINT it was written from; a value out of their range is damage.
func narrowInt32(mem memory.Allocator, src *array.Int32, to arrow.DataType) (arrow.Array, error) {
	lo, hi := int32(math.MinInt8), int32(math.MaxInt8)
	switch to.ID() {
	case arrow.INT8:
	case arrow.INT16:
		lo, hi = math.MinInt16, math.MaxInt16
	default:
		return nil, fmt.Errorf("%w: no cast from %v to %v", ErrUnsupported, src.DataType(), to)
	}
	for i := range src.Len() {
		if v := src.Value(i); src.IsValid(i) && (v < lo || v > hi) {
			return nil, fmt.Errorf("%w: value %d of an int column read as %v", ErrInvalidData, v, to)
		}
	}
	if to.ID() == arrow.INT8 {
		return fill(array.NewInt8Builder(mem), src.Len(), src.IsNull, func(i int) int8 { return int8(src.Value(i)) }), nil
	}
	return fill(array.NewInt16Builder(mem), src.Len(), src.IsNull, func(i int) int16 { return int16(src.Value(i)) }), nil
}

// builder is an arrow-go builder of values T.
type builder[T any] interface {
	AppendNull()
	UnsafeAppend(T)
	Reserve(int)
	NewArray() arrow.Array
	Release()
}

// fill builds, with b (which it releases), an array of n values: null
// where isNull says, value(i) elsewhere.
func fill[T any](b builder[T], n int, isNull func(int) bool, value func(int) T) arrow.Array {
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		if isNull(i) {
			b.AppendNull()
		} else {
			b.UnsafeAppend(value(i))
		}
	}
	return b.NewArray()
}

// widenTimestamp is a data file's microseconds read back as a
// TIMESTAMP(7..9)'s nanoseconds.
func widenTimestamp(mem memory.Allocator, src *array.Timestamp, to *arrow.TimestampType) (arrow.Array, error) {
	b := array.NewTimestampBuilder(mem, to)
	defer b.Release()
	b.Reserve(src.Len())
	for i := range src.Len() {
		if src.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := int64(src.Value(i))
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return nil, fmt.Errorf("%w: timestamp %d µs does not fit nanoseconds", ErrInvalidData, v)
		}
		b.UnsafeAppend(arrow.Timestamp(v * 1000))
	}
	return b.NewArray(), nil
}

// floorDiv is a / b rounded toward negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
