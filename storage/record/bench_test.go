package record

import (
	"testing"
)

// benchSchema is a typical event row of a few fields.
func benchSchema() Schema {
	return Schema{Columns: []Column{
		{Name: "id", Type: BigInt()},
		{Name: "user_name", Type: String(), Nullable: true},
		{Name: "score", Type: Double(), Nullable: true},
		{Name: "amount", Type: Decimal(10, 2), Nullable: true},
		{Name: "event_time", Type: TimestampLTZ(3)},
		{Name: "payload", Type: Bytes(), Nullable: true},
	}}
}

func setBenchRow(e *RowEncoder, i int64) {
	e.SetInt64(0, i)
	e.SetString(1, "a user name of some length")
	e.SetFloat64(2, 0.25)
	e.SetDecimal(3, 123456)
	e.SetTimestamp(4, 1_700_000_000_000+i, 0)
	e.SetBytes(5, []byte{1, 2, 3})
}

func TestRowEncodeDecodeAllocs(t *testing.T) {
	s := benchSchema()
	e := mustEncoder(t, s)
	buf := make([]byte, 0, 256)
	var err error
	encodeAllocs := testing.AllocsPerRun(100, func() {
		setBenchRow(e, 1)
		buf, err = e.Finish(buf[:0])
	})
	if err != nil {
		t.Fatal(err)
	}
	if encodeAllocs != 0 {
		t.Errorf("encode: %v allocations per row, want 0", encodeAllocs)
	}
	decodeAllocs := testing.AllocsPerRun(100, func() { decodeBenchRow(s, buf) })
	if decodeAllocs != 0 {
		t.Errorf("validate and decode: %v allocations per row, want 0", decodeAllocs)
	}
}

func decodeBenchRow(s Schema, row []byte) int64 {
	if err := ValidateRow(s, row); err != nil {
		panic(err)
	}
	v := NewRowView(s, row)
	n := v.Int64(0)
	n += int64(len(v.StringBytes(1)))
	n += int64(v.Float64(2))
	d, _ := v.DecimalInt64(3)
	ms, _ := v.Timestamp(4)
	return n + d + ms + int64(len(v.Bytes(5)))
}

func BenchmarkRowEncode(b *testing.B) {
	e := mustEncoder(b, benchSchema())
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		setBenchRow(e, int64(i))
		var err error
		if buf, err = e.Finish(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkRowDecode(b *testing.B) {
	s := benchSchema()
	e := mustEncoder(b, s)
	setBenchRow(e, 1)
	row := mustFinish(b, e)
	b.SetBytes(int64(len(row)))
	b.ReportAllocs()
	for b.Loop() {
		decodeBenchRow(s, row)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkRowToJSON(b *testing.B) {
	s := benchSchema()
	c, err := NewJSONCodec(s)
	if err != nil {
		b.Fatal(err)
	}
	e := mustEncoder(b, s)
	setBenchRow(e, 1)
	row := mustFinish(b, e)
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = c.AppendJSON(buf[:0], row); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkRowFromJSON(b *testing.B) {
	s := benchSchema()
	c, err := NewJSONCodec(s)
	if err != nil {
		b.Fatal(err)
	}
	object := []byte(`{"id":1,"user_name":"a user name of some length","score":0.25,"amount":1234.56,` +
		`"event_time":"2023-11-14T22:13:20.000Z","payload":"AQID"}`)
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(object)))
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = c.AppendRow(buf[:0], object); err != nil {
			b.Fatal(err)
		}
	}
}
