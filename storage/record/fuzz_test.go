package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// fuzzSchemas are the fixed schemas of the row fuzz targets.
func fuzzSchemas() []Schema {
	return []Schema{
		allTypesSchema(),
		{Columns: []Column{{Name: "s", Type: String(), Nullable: true}, {Name: "b", Type: Bytes(), Nullable: true}}},
		{Columns: []Column{
			{Name: "d", Type: Decimal(38, 10), Nullable: true},
			{Name: "e", Type: Decimal(18, 18), Nullable: true},
			{Name: "f", Type: Float(), Nullable: true},
			{Name: "g", Type: Double(), Nullable: true},
			{Name: "t0", Type: Timestamp(0), Nullable: true},
			{Name: "t7", Type: TimestampLTZ(7), Nullable: true},
			{Name: "t", Type: Time(), Nullable: true},
			{Name: "day", Type: Date(), Nullable: true},
			{Name: "k", Type: SmallInt()},
		}},
		nestedFuzzSchema(),
	}
}

// nestedFuzzSchema has nested columns three levels deep.
func nestedFuzzSchema() Schema {
	s, err := ParseSchema("tags ARRAY<STRING NOT NULL>, attrs MAP<STRING, BIGINT>, " +
		"byid MAP<INT, ARRAY<ROW<a INT, b STRING NOT NULL>>>, addr ROW<zip INT NOT NULL, geo ROW<lat DOUBLE, d DECIMAL(20,2)>>")
	if err != nil {
		panic(err)
	}
	return s
}

// nestedFuzzRows are rows of nestedFuzzSchema, as JSON objects.
var nestedFuzzRows = []string{
	`{"tags":["a","bcdefghij",""],"attrs":{"x":1,"y":null},"byid":[{"key":7,"value":[{"a":1,"b":"q"},null]},{"key":8,"value":[]}],"addr":{"zip":1,"geo":{"lat":1.5,"d":"12345678901234567.89"}}}`,
	`{"tags":[],"attrs":{},"byid":[],"addr":null}`,
	`{"tags":null,"attrs":{"k":-1},"byid":null,"addr":{"zip":0,"geo":null}}`,
}

// readAll calls every getter on every column of row, whatever its type.
func readAll(s Schema, row []byte) {
	v := NewRowView(s, row)
	_ = v.NumColumns()
	_ = v.Data()
	for i := range s.Columns {
		v.IsNull(i)
		v.Bool(i)
		v.Int64(i)
		v.Float32(i)
		v.Float64(i)
		v.String(i)
		v.StringBytes(i)
		v.Bytes(i)
		v.Timestamp(i)
		switch s.Columns[i].Type.Kind() {
		case KindDecimal:
			v.DecimalInt64(i)
			v.AppendDecimalBytes(nil, i)
			v.DecimalBig(i)
		case KindArray:
			readArray(v.Array(i))
		case KindMap:
			m := v.Map(i)
			readArray(m.Keys())
			readArray(m.Values())
		case KindRow:
			readAll(Schema{Columns: s.Columns[i].Type.Fields()}, v.Row(i).Data())
		}
	}
}

// readArray calls the getters of the elements of a, as readAll does.
func readArray(a ArrayView) {
	for j := range min(a.Len(), 64) {
		a.IsNull(j)
		a.Int64(j)
		a.String(j)
		a.Timestamp(j)
		a.Array(j)
		a.Map(j)
		a.Row(j)
	}
}

// checkValidRowRoundTrip checks that a row ValidateRow accepted converts to
// JSON and back to the same bytes.
func checkValidRowRoundTrip(t testing.TB, s Schema, row []byte) {
	t.Helper()
	js, err := AppendRowJSON(nil, s, row)
	if err != nil {
		t.Fatalf("AppendRowJSON of a valid row %x: %v", row, err)
	}
	if !json.Valid(js) {
		t.Fatalf("AppendRowJSON wrote invalid JSON: %s", js)
	}
	back, err := AppendRowFromJSON(nil, s, js)
	if err != nil {
		t.Fatalf("AppendRowFromJSON(%s): %v", js, err)
	}
	if !bytes.Equal(back, row) {
		t.Fatalf("JSON round trip changed the row\n  in %x\n out %x\njson %s", row, back, js)
	}
}

func FuzzParseSchema(f *testing.F) {
	for _, seed := range []string{
		"id BIGINT NOT NULL, name STRING, amount DECIMAL(10,2)",
		"id BIGINT NOT NULL PRIMARY KEY, v VARCHAR NULL",
		"a INT NOT NULL, b STRING NOT NULL, PRIMARY KEY (b, a)",
		"t TIMESTAMP(9), l TIMESTAMP_LTZ, d DATE, x TIME, y BYTEA, z bool, q numeric(38, 38)",
		"a DECIMAL(", "a INT,,", "PRIMARY KEY (a)", "",
		allTypesSchema().String(),
		nestedFuzzSchema().String(),
		"a array<map<int, row<x array<int not null> not null, y string>>> not null",
		"a ARRAY<", "a MAP<INT,", "a ROW<a INT,>", "a ARRAY<ARRAY<ARRAY<INT>>",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := ParseSchema(src)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("error %v does not match ErrInvalidSchema", err)
			}
			return
		}
		checkSchemaRoundTrips(t, s)
	})
}

func FuzzSchemaUnmarshalBinary(f *testing.F) {
	for _, s := range fuzzSchemas() {
		b, err := s.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1, 1, 1, 'a', 4, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Schema
		if err := s.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("error %v does not match ErrInvalidSchema", err)
			}
			return
		}
		again, err := s.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("re-encoding = %x, %v; want %x", again, err, data)
		}
	})
}

func FuzzRowDecode(f *testing.F) {
	schemas := fuzzSchemas()
	e := mustEncoder(f, schemas[0])
	fullRow(e)
	f.Add(uint8(0), mustFinish(f, e))
	e.SetInt64(0, 1)
	e.SetString(1, "")
	f.Add(uint8(0), mustFinish(f, e))
	f.Add(uint8(0), []byte{})
	e = mustEncoder(f, schemas[1])
	e.SetString(0, "a longer string value")
	e.SetBytes(1, []byte("bytes"))
	f.Add(uint8(1), mustFinish(f, e))
	f.Add(uint8(1), make([]byte, fixedEnd(2)))
	e = mustEncoder(f, schemas[2])
	e.SetDecimal(0, -1)
	e.SetDecimal(1, 123)
	e.SetFloat32(2, -0.0)
	e.SetFloat64(3, 1e300)
	e.SetTimestamp(4, -1000, 0)
	e.SetTimestamp(5, 12345, 100)
	e.SetInt64(6, 1)
	e.SetInt64(7, -1)
	e.SetInt64(8, -5)
	f.Add(uint8(2), mustFinish(f, e))
	for _, js := range nestedFuzzRows {
		row, err := AppendRowFromJSON(nil, schemas[3], []byte(js))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(3), row)
	}
	f.Fuzz(func(t *testing.T, which uint8, row []byte) {
		s := schemas[int(which)%len(schemas)]
		readAll(s, row)
		err := ValidateRow(s, row)
		if err != nil {
			if !errors.Is(err, ErrInvalidRow) {
				t.Fatalf("error %v does not match ErrInvalidRow", err)
			}
			if _, err := AppendRowJSON(nil, s, row); err == nil {
				t.Fatal("AppendRowJSON accepted a row ValidateRow rejects")
			}
			return
		}
		checkValidRowRoundTrip(t, s, row)
	})
}

func FuzzRowFromJSON(f *testing.F) {
	schemas := fuzzSchemas()
	for _, seed := range []string{
		`{"id":1,"region":"eu","amount":"12.5","ts9":"2024-02-29T23:59:59.123456789","ltz6":1700000000000}`,
		`{"id":-9223372036854775808,"region":"\ud83d\ude00","note":"\u00e9","blob":"AAEC/w==","day":"0000-01-01","clock":"23:59:59.999"}`,
		`{"id":1,"region":"x","f32":"NaN","f64":-1e308,"big_amount":1e-6,"ltz9":"2024-01-01T00:00:00.000000001+05:30"}`,
		`{"s":"\ud800","b":"@@"}`,
		`{"d":"-0.0000000001","e":0.5,"t0":"1970-01-01 00:00:00","t7":"9999-12-31T23:59:59.9999999Z","k":1}`,
		`[1]`, `{"id":1,}`, `{"id":1} x`,
		nestedFuzzRows[0], nestedFuzzRows[1], nestedFuzzRows[2],
		`{"tags":["a",1]}`, `{"attrs":{"a":1,"a":2}}`, `{"byid":[{"key":1}]}`, `{"addr":{"zip":1,"geo":{"lat":"NaN","x":1}}}`,
	} {
		for which := range schemas {
			f.Add(uint8(which), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, object []byte) {
		s := schemas[int(which)%len(schemas)]
		row, err := AppendRowFromJSON(nil, s, object)
		if err != nil {
			var ce *ColumnError
			if !errors.As(err, &ce) && !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("error %v is neither a *ColumnError nor ErrInvalidJSON", err)
			}
			return
		}
		if err := ValidateRow(s, row); err != nil {
			t.Fatalf("row from %s does not validate: %v", object, err)
		}
		checkValidRowRoundTrip(t, s, row)
	})
}
