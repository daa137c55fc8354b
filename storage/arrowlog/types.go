package arrowlog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/floedb/floe/storage/record"
)

// arrowType is the Arrow type of a column's values (see the table in the
// package documentation).
func arrowType(t record.DataType) (arrow.DataType, error) {
	switch t.Kind() {
	case record.KindBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case record.KindTinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case record.KindSmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case record.KindInt:
		return arrow.PrimitiveTypes.Int32, nil
	case record.KindBigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case record.KindFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case record.KindDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case record.KindDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision()), Scale: int32(t.Scale())}, nil
	case record.KindString:
		return arrow.BinaryTypes.String, nil
	case record.KindBytes:
		return arrow.BinaryTypes.Binary, nil
	case record.KindDate:
		return arrow.FixedWidthTypes.Date32, nil
	case record.KindTime:
		return arrow.FixedWidthTypes.Time32ms, nil
	case record.KindTimestamp:
		return &arrow.TimestampType{Unit: timestampUnit(t)}, nil
	case record.KindTimestampLTZ:
		return &arrow.TimestampType{Unit: timestampUnit(t), TimeZone: "UTC"}, nil
	case record.KindArray:
		elem := t.Elem()
		et, err := arrowType(elem.Type)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: elementName, Type: et, Nullable: elem.Nullable}), nil
	case record.KindMap:
		key, value := t.MapKey(), t.MapValue()
		kt, err := arrowType(key.Type)
		if err != nil {
			return nil, err
		}
		vt, err := arrowType(value.Type)
		if err != nil {
			return nil, err
		}
		// Entries keep the order they were written in: keysSorted false.
		return arrow.MapOfFields(arrow.Field{Type: kt}, arrow.Field{Type: vt, Nullable: value.Nullable}), nil
	case record.KindRow:
		fields, err := arrowFields(t.Fields())
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	default:
		return nil, fmt.Errorf("%w: %v has no Arrow mapping", ErrUnsupportedType, t)
	}
}

// elementName is the name of the element field of the list an ARRAY
// becomes, as record names an ARRAY's element.
const elementName = "element"

// arrowFields are the Arrow fields of columns (or of a ROW's fields):
// named and nullable as they are.
func arrowFields(columns []record.Column) ([]arrow.Field, error) {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		t, err := arrowType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		fields[i] = arrow.Field{Name: c.Name, Type: t, Nullable: c.Nullable}
	}
	return fields, nil
}

// timestampUnit is microseconds up to precision 6, nanoseconds above.
func timestampUnit(t record.DataType) arrow.TimeUnit {
	if t.Precision() <= record.MaxCompactTimestampPrecision {
		return arrow.Microsecond
	}
	return arrow.Nanosecond
}

// ArrowSchema is the Arrow schema of payloads of s: one field per column,
// named and nullable as the column. An engine reading a payload with
// Arrow's IPC reader is given this schema (its schema message), which no
// payload carries.
func ArrowSchema(s record.Schema) (*arrow.Schema, error) {
	fields, err := arrowFields(s.Columns)
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// shape is how many field nodes and buffers one column takes in a record
// batch message: those of its Arrow type, then of its children's, in
// depth-first order as the IPC format lays them out.
type shape struct{ nodes, buffers int }

func shapeOf(t arrow.DataType) shape {
	sh := shape{nodes: 1, buffers: len(t.Layout().Buffers)}
	if nested, ok := t.(arrow.NestedType); ok {
		for _, f := range nested.Fields() {
			child := shapeOf(f.Type)
			sh.nodes += child.nodes
			sh.buffers += child.buffers
		}
	}
	return sh
}

// layout locates every column's field nodes and buffers in a record batch
// message of a schema.
type layout struct {
	columns []columnLayout
	nodes   int // in all
	buffers int // in all
}

// columnLayout is where column's nodes and buffers start, and how many.
type columnLayout struct {
	firstNode, firstBuffer int
	shape
}

func newLayout(s record.Schema) (layout, error) {
	l := layout{columns: make([]columnLayout, len(s.Columns))}
	for i, c := range s.Columns {
		t, err := arrowType(c.Type)
		if err != nil {
			return layout{}, fmt.Errorf("column %q: %w", c.Name, err)
		}
		sh := shapeOf(t)
		l.columns[i] = columnLayout{firstNode: l.nodes, firstBuffer: l.buffers, shape: sh}
		l.nodes += sh.nodes
		l.buffers += sh.buffers
	}
	return l, nil
}

// SubSchema is the schema of the columns of s at the given indexes, in that
// order: what a payload projected with Project holds. The indexes must be
// distinct and in range (Project checks them). The sub-schema has no
// primary key: it describes projected data, not a table.
func SubSchema(s record.Schema, columns []int) record.Schema {
	sub := record.Schema{Columns: make([]record.Column, len(columns))}
	for k, i := range columns {
		sub.Columns[k] = s.Columns[i]
	}
	return sub
}
