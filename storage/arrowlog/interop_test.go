package arrowlog

import (
	"bytes"
	"math"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/floedb/floe/storage/record"
)

// TestArrowReaderReadsPayloads: Arrow's own IPC reader, given the schema
// message ArrowSchema makes, reads payloads, so engines that read Arrow
// read them.
func TestArrowReaderReadsPayloads(t *testing.T) {
	s := allKindsSchema()
	rows := sampleRows(t, s, 100)
	schema, err := ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range compressions {
		t.Run(comp.String(), func(t *testing.T) {
			payload := encodeRows(t, s, Options{Compression: comp}, rows)
			var stream bytes.Buffer
			w := ipc.NewWriter(&stream, ipc.WithSchema(schema))
			if err := w.Close(); err != nil { // the schema message, then end of stream
				t.Fatal(err)
			}
			eos := stream.Bytes()[stream.Len()-8:]
			data := append(append(bytes.Clone(stream.Bytes()[:stream.Len()-8]), payload...), eos...)
			r, err := ipc.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			if !r.Next() {
				t.Fatalf("no record batch: %v", r.Err())
			}
			rec := r.RecordBatch()
			if int(rec.NumRows()) != len(rows) || !rec.Schema().Equal(schema) {
				t.Fatalf("%d rows of %v", rec.NumRows(), rec.Schema())
			}
			for c, col := range rec.Columns() {
				for i, row := range rows {
					compareValue(t, s.Columns[c].Type, record.NewRowView(s, row), c, col, i)
				}
			}
		})
	}
}

// compareValue checks value i of an Arrow array against value vi of v, of
// type typ, and the values nested in them.
func compareValue[V valueSource](t *testing.T, typ record.DataType, v V, vi int, col arrow.Array, i int) {
	t.Helper()
	if v.IsNull(vi) != col.IsNull(i) {
		t.Fatalf("%v value %d: null %v, Arrow says %v", typ, vi, v.IsNull(vi), col.IsNull(i))
	}
	if v.IsNull(vi) {
		return
	}
	var same bool
	switch a := col.(type) {
	case *array.Boolean:
		same = a.Value(i) == v.Bool(vi)
	case *array.Int8:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int16:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Int64:
		same = a.Value(i) == v.Int64(vi)
	case *array.Float32:
		same = a.Value(i) == v.Float32(vi) || math.IsNaN(float64(a.Value(i))) && math.IsNaN(float64(v.Float32(vi)))
	case *array.Float64:
		same = a.Value(i) == v.Float64(vi) || math.IsNaN(a.Value(i)) && math.IsNaN(v.Float64(vi))
	case *array.Decimal128:
		same = a.Value(i).BigInt().Cmp(bigOfTwos(v.AppendDecimalBytes(nil, vi))) == 0
	case *array.String:
		same = a.Value(i) == string(v.Bytes(vi))
	case *array.Binary:
		same = bytes.Equal(a.Value(i), v.Bytes(vi))
	case *array.Date32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Time32:
		same = int64(a.Value(i)) == v.Int64(vi)
	case *array.Timestamp:
		millis, nanos := v.Timestamp(vi)
		unit := a.DataType().(*arrow.TimestampType).Unit
		got := a.Value(i).ToTime(unit)
		same = got.UnixMilli() == millis && int32(got.Nanosecond()%1_000_000) == nanos
	case *array.Map: // before List, which it embeds
		m := v.Map(vi)
		start, end := a.ValueOffsets(i)
		if same = int(end-start) == m.Len(); same {
			for j := range m.Len() {
				compareValue(t, typ.MapKey().Type, m.Keys(), j, a.Keys(), int(start)+j)
				compareValue(t, typ.MapValue().Type, m.Values(), j, a.Items(), int(start)+j)
			}
		}
	case *array.List:
		elems := v.Array(vi)
		start, end := a.ValueOffsets(i)
		if same = int(end-start) == elems.Len(); same {
			for j := range elems.Len() {
				compareValue(t, typ.Elem().Type, elems, j, a.ListValues(), int(start)+j)
			}
		}
	case *array.Struct:
		fields := v.Row(vi)
		for f, field := range typ.Fields() {
			compareValue(t, field.Type, fields, f, a.Field(f), i)
		}
		same = true
	default:
		t.Fatalf("%v: unexpected Arrow array %T", typ, col)
	}
	if !same {
		t.Fatalf("%v value %d: Arrow reads %v", typ, vi, col.ValueStr(i))
	}
}

// bigOfTwos is the value of big-endian two's complement bytes.
func bigOfTwos(twos []byte) *big.Int {
	v := new(big.Int).SetBytes(twos)
	if len(twos) > 0 && twos[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(twos))))
	}
	return v
}
