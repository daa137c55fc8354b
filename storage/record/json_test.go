package record

import (
	"errors"
	"math"
	"testing"
)

func TestJSONAllTypesGolden(t *testing.T) {
	s := allTypesSchema()
	e := mustEncoder(t, s)
	fullRow(e)
	row := mustFinish(t, e)
	got, err := AppendRowJSON(nil, s, row)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"id":-9223372036854775808,"region":"eu-west","flag":true,"tiny":-128,"small":32767,` +
		`"num":-2147483648,"f32":1.5,"f64":-1.7976931348623157e+308,"amount":-99999999.99,` +
		`"big_amount":99999999999999999999999999999999.999999,"note":"héllo, wörld","blob":"AAEC/w==",` +
		`"day":"9999-12-31","clock":"23:59:59.999","ts3":"0000-01-01T00:00:00.000",` +
		`"ts9":"9999-12-31T23:59:59.999999999","ltz6":"2023-11-14T22:13:20.123456Z",` +
		`"ltz9":"1969-12-31T23:59:59.999000001Z"}`
	if string(got) != want {
		t.Fatalf("AppendRowJSON\n got %s\nwant %s", got, want)
	}
	back, err := AppendRowFromJSON(nil, s, got)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(row) {
		t.Fatal("JSON round trip changed the row")
	}
}

// TestJSONValues converts {"v": in} to a row of one column and back, and
// checks the JSON written.
func TestJSONValues(t *testing.T) {
	tests := []struct {
		typ  DataType
		in   string
		want string // "" when equal to in
	}{
		{Boolean(), `true`, ``},
		{Boolean(), `false`, ``},
		{TinyInt(), `-128`, ``},
		{TinyInt(), `127`, ``},
		{SmallInt(), `-32768`, ``},
		{Int(), `2147483647`, ``},
		{BigInt(), `9223372036854775807`, ``},
		{BigInt(), `-9223372036854775808`, ``},
		{BigInt(), `-0`, `0`},
		{BigInt(), `7.0`, `7`},
		{BigInt(), `7e2`, `700`},
		{BigInt(), `1.5e1`, `15`},
		{BigInt(), `92233720368547758.07e2`, `9223372036854775807`},
		{Float(), `1.5`, ``},
		{Float(), `0.1`, ``},
		{Float(), `3.4028235e38`, `3.4028235e+38`},
		{Float(), `1e-7`, `1e-07`},
		{Float(), `1e-50`, `0`},
		{Float(), `-0`, ``},
		{Float(), `"NaN"`, ``},
		{Float(), `"-Infinity"`, ``},
		{Double(), `0.1`, ``},
		{Double(), `1e21`, `1e+21`},
		{Double(), `123456789012345680000`, ``},
		{Double(), `5e-324`, `5e-324`},
		{Double(), `"Infinity"`, ``},
		{Double(), `-1.25`, ``},
		{Decimal(10, 2), `12.5`, `12.50`},
		{Decimal(10, 2), `"12.5"`, `12.50`},
		{Decimal(10, 2), `"+1.25e1"`, `12.50`},
		{Decimal(10, 2), `-0.05`, ``},
		{Decimal(10, 2), `"-0.00"`, `0.00`},
		{Decimal(10, 2), `12.3400000`, `12.34`},
		{Decimal(10, 2), `99999999.99`, ``},
		{Decimal(10, 2), `0e999999999999`, `0.00`},
		{Decimal(5, 0), `12345`, ``},
		{Decimal(18, 18), `0.123456789012345678`, ``},
		{Decimal(38, 0), `-99999999999999999999999999999999999999`, ``},
		{Decimal(38, 38), `0.00000000000000000000000000000000000001`, ``},
		{Decimal(38, 10), `"1e27"`, `1000000000000000000000000000.0000000000`},
		{String(), `""`, ``},
		{String(), `"tab\tquote\"back\\slash\u0001\u00e9\ud83d\ude00\/"`, "\"tab\\tquote\\\"back\\\\slash\\u0001é😀/\""},
		{String(), `"\u0000"`, `"\u0000"`},
		{Bytes(), `""`, ``},
		{Bytes(), `"AAEC/w=="`, ``},
		{Date(), `"1970-01-01"`, ``},
		{Date(), `"2024-02-29"`, ``},
		{Date(), `"0000-01-01"`, ``},
		{Time(), `"00:00:00"`, ``},
		{Time(), `"23:59:59.5"`, `"23:59:59.500"`},
		{Time(), `"12:00:00.000000000"`, `"12:00:00"`},
		{Timestamp(0), `"2024-01-02T03:04:05"`, ``},
		{Timestamp(3), `"2024-01-02 03:04:05.1"`, `"2024-01-02T03:04:05.100"`},
		{Timestamp(6), `"1969-12-31T23:59:59.999999"`, ``},
		{Timestamp(9), `"2024-01-02t03:04:05.123456789"`, `"2024-01-02T03:04:05.123456789"`},
		{Timestamp(3), `"2024-01-02T03:04:05.123000000"`, `"2024-01-02T03:04:05.123"`},
		{TimestampLTZ(3), `"2024-01-02T03:04:05.123+01:00"`, `"2024-01-02T02:04:05.123Z"`},
		{TimestampLTZ(0), `"2024-01-02T00:30:00-00:45"`, `"2024-01-02T01:15:00Z"`},
		{TimestampLTZ(3), `1700000000123`, `"2023-11-14T22:13:20.123Z"`},
		{TimestampLTZ(6), `-1`, `"1969-12-31T23:59:59.999000Z"`},
		{TimestampLTZ(9), `"9999-12-31T23:59:59.999999999z"`, `"9999-12-31T23:59:59.999999999Z"`},
		{TimestampLTZ(3), `"1970-01-01T00:00:00Z"`, `"1970-01-01T00:00:00.000Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String()+" "+tt.in, func(t *testing.T) {
			s := Schema{Columns: []Column{{Name: "v", Type: tt.typ}}}
			row, err := AppendRowFromJSON(nil, s, []byte(`{"v":`+tt.in+`}`))
			if err != nil {
				t.Fatalf("AppendRowFromJSON: %v", err)
			}
			if err := ValidateRow(s, row); err != nil {
				t.Fatalf("ValidateRow: %v", err)
			}
			got, err := AppendRowJSON(nil, s, row)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if string(got) != `{"v":`+want+`}` {
				t.Errorf("AppendRowJSON = %s, want {\"v\":%s}", got, want)
			}
			checkValidRowRoundTrip(t, s, row)
		})
	}
}

func TestJSONFloatSpecials(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "f", Type: Float()}, {Name: "d", Type: Double()}}}
	row, err := AppendRowFromJSON(nil, s, []byte(`{"f":"NaN","d":"-Infinity"}`))
	if err != nil {
		t.Fatal(err)
	}
	v := NewRowView(s, row)
	if !math.IsNaN(float64(v.Float32(0))) || !math.IsInf(v.Float64(1), -1) {
		t.Fatalf("got %v, %v", v.Float32(0), v.Float64(1))
	}
}

func TestJSONNulls(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "a", Type: Int()}, {Name: "b", Type: String(), Nullable: true}, {Name: "c", Type: Date(), Nullable: true}}}
	c, err := NewJSONCodec(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{`{"a":1}`, `{"a":1,"b":null}`, ` { "c" : null , "a" : 1 } `, "{\"a\":1,\n\"b\":null}\n"} {
		row, err := c.AppendRow(nil, []byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, err := c.AppendJSON(nil, row)
		if err != nil || string(got) != `{"a":1,"b":null,"c":null}` {
			t.Fatalf("%s: AppendJSON = %s, %v", in, got, err)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		typ      DataType
		nullable bool
		object   string
		want     error
		msg      string // "" to skip the message check
	}{
		// Syntax.
		{Int(), false, ``, ErrInvalidJSON, ""},
		{Int(), false, `[1]`, ErrInvalidJSON, "record: invalid JSON row: not a JSON object"},
		{Int(), false, `"v"`, ErrInvalidJSON, ""},
		{Int(), false, `{"v":1`, ErrInvalidJSON, ""},
		{Int(), false, `{"v":1,}`, ErrInvalidJSON, ""},
		{Int(), false, `{"v":01}`, ErrInvalidJSON, ""},
		{Int(), false, `{"v":1} {}`, ErrInvalidJSON, "record: invalid JSON row at column 9: data after the object"},
		{Int(), false, `{"v":1,}`, ErrInvalidJSON, "record: invalid JSON row at column 8: invalid character '}' looking for beginning of object key string"},
		{Int(), false, `{"v":`, ErrInvalidJSON, "record: invalid JSON row at column 6: the object is cut short"},
		{Int(), false, `{"v":1} x`, ErrInvalidJSON, ""},
		// Columns.
		{Int(), false, `{"v":1,"w":2}`, ErrUnknownColumn, `record: column "w": not in the schema`},
		{Int(), false, `{"V":1}`, ErrUnknownColumn, ""},
		{Int(), false, `{"v":1,"v":2}`, ErrDuplicateColumn, `record: column "v": given twice`},
		{Int(), false, `{}`, ErrNullNotAllowed, `record: column "v": missing value for NOT NULL column`},
		{Int(), false, `{"v":null}`, ErrNullNotAllowed, `record: column "v": null for NOT NULL column`},
		// Wrong JSON types.
		{Boolean(), true, `{"v":1}`, ErrWrongType, `record: column "v": expected JSON boolean for BOOLEAN, got number`},
		{Boolean(), true, `{"v":"true"}`, ErrWrongType, ""},
		{BigInt(), true, `{"v":"1"}`, ErrWrongType, `record: column "v": expected JSON number for BIGINT, got string`},
		{BigInt(), true, `{"v":[1]}`, ErrWrongType, `record: column "v": expected JSON number for BIGINT, got array`},
		{BigInt(), true, `{"v":{}}`, ErrWrongType, ""},
		{BigInt(), true, `{"v":true}`, ErrWrongType, ""},
		{Double(), true, `{"v":true}`, ErrWrongType, ""},
		{Decimal(10, 2), true, `{"v":false}`, ErrWrongType, `record: column "v": expected JSON number or string for DECIMAL(10,2), got boolean`},
		{String(), true, `{"v":1}`, ErrWrongType, `record: column "v": expected JSON string for STRING, got number`},
		{Bytes(), true, `{"v":[0]}`, ErrWrongType, ""},
		{Date(), true, `{"v":19000}`, ErrWrongType, ""},
		{Timestamp(3), true, `{"v":1}`, ErrWrongType, ""},
		{TimestampLTZ(3), true, `{"v":true}`, ErrWrongType, `record: column "v": expected JSON string or number for TIMESTAMP_LTZ(3), got boolean`},
		// Integers.
		{BigInt(), true, `{"v":1.5}`, ErrWrongType, `record: column "v": value 1.5 is not an integer`},
		{BigInt(), true, `{"v":1e-1}`, ErrWrongType, ""},
		{TinyInt(), true, `{"v":128}`, ErrOverflow, `record: column "v": value 128 out of range for TINYINT`},
		{TinyInt(), true, `{"v":-129}`, ErrOverflow, ""},
		{SmallInt(), true, `{"v":32768}`, ErrOverflow, ""},
		{Int(), true, `{"v":-2147483649}`, ErrOverflow, ""},
		{BigInt(), true, `{"v":9223372036854775808}`, ErrOverflow, `record: column "v": value 9223372036854775808 out of range for BIGINT`},
		{BigInt(), true, `{"v":-9223372036854775809}`, ErrOverflow, ""},
		{BigInt(), true, `{"v":1e19}`, ErrOverflow, ""},
		{BigInt(), true, `{"v":1e999999999999999999}`, ErrOverflow, ""},
		// Floats.
		{Float(), true, `{"v":1e39}`, ErrOverflow, `record: column "v": value 1e39 out of range for FLOAT`},
		{Double(), true, `{"v":-1e309}`, ErrOverflow, ""},
		{Double(), true, `{"v":"nan"}`, ErrInvalidValue, ""},
		{Double(), true, `{"v":"1.5"}`, ErrInvalidValue, ""},
		// Decimals.
		{Decimal(10, 2), true, `{"v":123.456}`, ErrOverflow, `record: column "v": value 123.456 exceeds DECIMAL(10,2)`},
		{Decimal(10, 2), true, `{"v":"0.001"}`, ErrOverflow, ""},
		{Decimal(10, 2), true, `{"v":100000000}`, ErrOverflow, ""},
		{Decimal(10, 2), true, `{"v":1e8}`, ErrOverflow, ""},
		{Decimal(38, 0), true, `{"v":1e38}`, ErrOverflow, ""},
		{Decimal(38, 38), true, `{"v":1}`, ErrOverflow, ""},
		{Decimal(10, 2), true, `{"v":"12,5"}`, ErrInvalidValue, `record: column "v": value "12,5" is not a decimal number`},
		{Decimal(10, 2), true, `{"v":""}`, ErrInvalidValue, ""},
		{Decimal(10, 2), true, `{"v":" 1"}`, ErrInvalidValue, ""},
		{Decimal(10, 2), true, `{"v":"NaN"}`, ErrInvalidValue, ""},
		{Decimal(10, 2), true, `{"v":"1e"}`, ErrInvalidValue, ""},
		// Strings and bytes.
		{String(), true, "{\"v\":\"a\xffb\"}", ErrInvalidUTF8, `record: column "v": string is not valid UTF-8`},
		{String(), true, "{\"v\":\"\xed\xa0\x80\"}", ErrInvalidUTF8, ""},
		{String(), true, "{\"v\":\"\\n\xc3\"}", ErrInvalidUTF8, ""},
		{String(), true, `{"v":"\ud800"}`, ErrInvalidUTF8, ""},
		{String(), true, `{"v":"\ud800x"}`, ErrInvalidUTF8, ""},
		{String(), true, `{"v":"\ud800\u0041"}`, ErrInvalidUTF8, ""},
		{String(), true, `{"v":"\udc00\ud800"}`, ErrInvalidUTF8, ""},
		{Bytes(), true, `{"v":"AAE"}`, ErrInvalidValue, ""},
		{Bytes(), true, `{"v":"AA-_"}`, ErrInvalidValue, ""},
		// Dates and times.
		{Date(), true, `{"v":"2023-02-29"}`, ErrInvalidValue, `record: column "v": value "2023-02-29" is not a valid DATE (want YYYY-MM-DD)`},
		{Date(), true, `{"v":"2024-13-01"}`, ErrInvalidValue, ""},
		{Date(), true, `{"v":"2024-1-01"}`, ErrInvalidValue, ""},
		{Date(), true, `{"v":"10000-01-01"}`, ErrInvalidValue, ""},
		{Date(), true, `{"v":"2024-01-01T00:00:00"}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"24:00:00"}`, ErrInvalidValue, ""},
		{Timestamp(6), true, `{"v":"2024-01-02T03:04:05Z"}`, ErrInvalidValue,
			`record: column "v": value "2024-01-02T03:04:05Z" has a time zone, and TIMESTAMP(6) is a date-time without zone (want YYYY-MM-DDTHH:MM:SS[.fffffffff]); use TIMESTAMP_LTZ for instants`},
		{Timestamp(3), true, `{"v":"2024-01-02T03:04:05.123+02:00"}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"23:59:60"}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"12:00"}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"12:00:00."}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"12:00:00.1234567891"}`, ErrInvalidValue, ""},
		{Time(), true, `{"v":"12:00:00.0001"}`, ErrOverflow, `record: column "v": value "12:00:00.0001" exceeds TIME (milliseconds)`},
		{Timestamp(3), true, `{"v":"2024-01-02T03:04:05.0001"}`, ErrOverflow, `record: column "v": value "2024-01-02T03:04:05.0001" exceeds TIMESTAMP(3)`},
		{Timestamp(0), true, `{"v":"2024-01-02T03:04:05.5"}`, ErrOverflow, ""},
		{Timestamp(6), true, `{"v":"2024-01-02T03:04:05Z"}`, ErrInvalidValue, ""},
		{Timestamp(6), true, `{"v":"2024-01-02"}`, ErrInvalidValue, ""},
		{Timestamp(6), true, `{"v":"2024-01-02_03:04:05"}`, ErrInvalidValue, ""},
		{TimestampLTZ(6), true, `{"v":"2024-01-02T03:04:05"}`, ErrInvalidValue, ""},
		{TimestampLTZ(6), true, `{"v":"2024-01-02T03:04:05+1:00"}`, ErrInvalidValue, ""},
		{TimestampLTZ(6), true, `{"v":"0000-01-01T00:00:00+00:01"}`, ErrOverflow, ""},
		{TimestampLTZ(6), true, `{"v":"9999-12-31T23:59:59-00:01"}`, ErrOverflow, ""},
		{TimestampLTZ(6), true, `{"v":253402300800000}`, ErrOverflow, ""},
		{TimestampLTZ(6), true, `{"v":1.5}`, ErrWrongType, ""},
		{TimestampLTZ(0), true, `{"v":1500}`, ErrOverflow, `record: column "v": value 1500 exceeds TIMESTAMP_LTZ(0)`},
	}
	for _, tt := range tests {
		t.Run(tt.typ.String()+" "+tt.object, func(t *testing.T) {
			s := Schema{Columns: []Column{{Name: "v", Type: tt.typ, Nullable: tt.nullable}}}
			c, err := NewJSONCodec(s)
			if err != nil {
				t.Fatal(err)
			}
			row, err := c.AppendRow([]byte("keep"), []byte(tt.object))
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendRow error = %v, want %v", err, tt.want)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("error\n got %s\nwant %s", err, tt.msg)
			}
			var ce *ColumnError
			if isColumnError := errors.As(err, &ce); isColumnError == (tt.want == ErrInvalidJSON) {
				t.Errorf("error %v: *ColumnError = %v", err, isColumnError)
			}
			if string(row) != "keep" {
				t.Errorf("dst changed on error: %q", row)
			}
			// The codec works after an error.
			if _, err := c.AppendRow(nil, []byte(`{"v":null}`)); tt.nullable && err != nil {
				t.Errorf("next row: %v", err)
			}
		})
	}
}

func TestJSONCodecRejectsInvalidSchema(t *testing.T) {
	if _, err := NewJSONCodec(Schema{}); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("NewJSONCodec(Schema{}) = %v", err)
	}
	if _, err := AppendRowFromJSON(nil, Schema{}, []byte(`{}`)); !errors.Is(err, ErrInvalidSchema) {
		t.Fatalf("AppendRowFromJSON with an empty schema = %v", err)
	}
}

func TestAppendJSONInvalidRow(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "v", Type: Int()}}}
	got, err := AppendRowJSON([]byte("keep"), s, []byte{1, 2, 3})
	if !errors.Is(err, ErrInvalidRow) || string(got) != "keep" {
		t.Fatalf("AppendRowJSON = %q, %v", got, err)
	}
}
