package arrowlog

import (
	"bytes"
	"math"
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
					compareValue(t, s, row, c, col, i)
				}
			}
		})
	}
}

// compareValue checks record i of an Arrow array against column c of row.
func compareValue(t *testing.T, s record.Schema, row []byte, c int, col arrow.Array, i int) {
	t.Helper()
	v := record.NewRowView(s, row)
	if v.IsNull(c) != col.IsNull(i) {
		t.Fatalf("column %d record %d: null %v, Arrow says %v", c, i, v.IsNull(c), col.IsNull(i))
	}
	if v.IsNull(c) {
		return
	}
	var same bool
	switch a := col.(type) {
	case *array.Boolean:
		same = a.Value(i) == v.Bool(c)
	case *array.Int8:
		same = int64(a.Value(i)) == v.Int64(c)
	case *array.Int16:
		same = int64(a.Value(i)) == v.Int64(c)
	case *array.Int32:
		same = int64(a.Value(i)) == v.Int64(c)
	case *array.Int64:
		same = a.Value(i) == v.Int64(c)
	case *array.Float32:
		same = a.Value(i) == v.Float32(c) || math.IsNaN(float64(a.Value(i))) && math.IsNaN(float64(v.Float32(c)))
	case *array.Float64:
		same = a.Value(i) == v.Float64(c) || math.IsNaN(a.Value(i)) && math.IsNaN(v.Float64(c))
	case *array.Decimal128:
		same = a.Value(i).BigInt().Cmp(v.DecimalBig(c)) == 0
	case *array.String:
		same = a.Value(i) == v.String(c)
	case *array.Binary:
		same = bytes.Equal(a.Value(i), v.Bytes(c))
	case *array.Date32:
		same = int64(a.Value(i)) == v.Int64(c)
	case *array.Time32:
		same = int64(a.Value(i)) == v.Int64(c)
	case *array.Timestamp:
		millis, nanos := v.Timestamp(c)
		unit := a.DataType().(*arrow.TimestampType).Unit
		got := a.Value(i).ToTime(unit)
		same = got.UnixMilli() == millis && int32(got.Nanosecond()%1_000_000) == nanos
	default:
		t.Fatalf("column %d: unexpected Arrow array %T", c, col)
	}
	if !same {
		t.Fatalf("column %d record %d: Arrow reads %v", c, i, col.ValueStr(i))
	}
}
