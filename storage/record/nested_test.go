package record

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustParseSchema(t *testing.T, src string) Schema {
	t.Helper()
	s, err := ParseSchema(src)
	if err != nil {
		t.Fatalf("ParseSchema(%q): %v", src, err)
	}
	return s
}

// TestNestedJSONRoundTrip: JSON objects with nested values become rows that
// validate, read back through the views and print as the same JSON.
func TestNestedJSONRoundTrip(t *testing.T) {
	s := mustParseSchema(t, "id BIGINT NOT NULL, tags ARRAY<STRING NOT NULL>, attrs MAP<STRING, BIGINT>, "+
		"byid MAP<INT, ARRAY<ROW<a INT, b STRING NOT NULL>>>, addr ROW<street STRING, zip INT NOT NULL, geo ROW<lat DOUBLE, lon DOUBLE>>")
	tests := []string{
		`{"id":1,"tags":["a","bcdefghij",""],"attrs":{"x":1,"y":null},"byid":[{"key":7,"value":[{"a":1,"b":"q"},null]},{"key":8,"value":[]}],"addr":{"street":"Main","zip":12345,"geo":{"lat":1.5,"lon":null}}}`,
		`{"id":2,"tags":[],"attrs":{},"byid":[],"addr":null}`,
		`{"id":3,"tags":null,"attrs":null,"byid":null,"addr":{"street":null,"zip":0,"geo":null}}`,
	}
	for _, in := range tests {
		row, err := AppendRowFromJSON(nil, s, []byte(in))
		if err != nil {
			t.Fatalf("AppendRowFromJSON(%s): %v", in, err)
		}
		if err := ValidateRow(s, row); err != nil {
			t.Fatalf("ValidateRow(%s): %v", in, err)
		}
		out, err := AppendRowJSON(nil, s, row)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("JSON round trip\n got %s\nwant %s", out, in)
		}
	}
	row, _ := AppendRowFromJSON(nil, s, []byte(tests[0]))
	v := NewRowView(s, row)
	if got := v.Array(1).String(1); got != "bcdefghij" {
		t.Errorf("tags[1] = %q", got)
	}
	if m := v.Map(2); m.Len() != 2 || m.Keys().String(1) != "y" || !m.Values().IsNull(1) || m.Values().Int64(0) != 1 {
		t.Errorf("attrs: len %d", m.Len())
	}
	if got := v.Map(3).Values().Array(0).Row(0).String(1); got != "q" {
		t.Errorf("byid[0].value[0].b = %q", got)
	}
	if got := v.Row(4).Row(2).Float64(0); got != 1.5 {
		t.Errorf("addr.geo.lat = %v", got)
	}
}

func TestNestedJSONErrors(t *testing.T) {
	s := mustParseSchema(t, "tags ARRAY<STRING NOT NULL>, attrs MAP<STRING, TINYINT>, byid MAP<INT, STRING>, addr ROW<zip INT NOT NULL>")
	tests := []struct {
		in   string
		want string
		kind error
	}{
		{`{"tags":["a","b","c",7]}`, `column "tags"[3]: expected JSON string for STRING, got number`, ErrWrongType},
		{`{"tags":"a"}`, `column "tags": expected JSON array for ARRAY<STRING NOT NULL>, got string`, ErrWrongType},
		{`{"tags":[null]}`, `column "tags"[0]: null for NOT NULL column`, ErrNullNotAllowed},
		{`{"attrs":{"a":1000}}`, `column "attrs"["a"]: value 1000 out of range for TINYINT`, ErrOverflow},
		{`{"attrs":{"a":1,"a":2}}`, `column "attrs".keys[1]: duplicate key (also key 0)`, ErrInvalidValue},
		{`{"byid":{"1":"x"}}`, `column "byid": expected JSON array of {"key": …, "value": …} objects`, ErrWrongType},
		{`{"byid":[{"key":1,"value":"x","other":2}]}`, `column "byid"[0]: map entry member "other" is neither`, ErrUnknownColumn},
		{`{"byid":[{"value":"x"}]}`, `column "byid"[0].key: missing map key`, ErrNullNotAllowed},
		{`{"byid":[{"key":"1"}]}`, `column "byid"[0].key: expected JSON number for INT, got string`, ErrWrongType},
		{`{"addr":{}}`, `column "addr".zip: missing value for NOT NULL column`, ErrNullNotAllowed},
		{`{"addr":{"zip":1,"city":"x"}}`, `column "addr".city: not a field of ROW<zip INT NOT NULL>`, ErrUnknownColumn},
		{`{"addr":{"zip":1,"zip":2}}`, `column "addr".zip: given twice`, ErrDuplicateColumn},
	}
	for _, tt := range tests {
		_, err := AppendRowFromJSON(nil, s, []byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, tt.kind) {
			t.Errorf("%s: got %v, want %q matching %v", tt.in, err, tt.want, tt.kind)
		}
	}
}

// TestNestedLayoutExample checks the example of the layout comment in row.go.
func TestNestedLayoutExample(t *testing.T) {
	s := mustParseSchema(t, "tags ARRAY<STRING NOT NULL>")
	row, err := AppendRowFromJSON(nil, s, []byte(`{"tags":["a","hello, world"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "00" + "0900000021000000" + "02000000" + "00" + "6100000000000081" + "110000000c000000" + "68656c6c6f2c20776f726c64"
	if got := hex.EncodeToString(row); got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
}

func TestNestedTypeStringAndParse(t *testing.T) {
	tests := []struct {
		in   string
		want DataType
		text string
	}{
		{"array<int>", Array(Int(), true), "ARRAY<INT>"},
		{"ARRAY < INT NOT NULL >", Array(Int(), false), "ARRAY<INT NOT NULL>"},
		{"MAP<STRING,BIGINT>", Map(String(), BigInt(), true), "MAP<STRING, BIGINT>"},
		{"map<string not null, bigint not null>", Map(String(), BigInt(), false), "MAP<STRING, BIGINT NOT NULL>"},
		{"ROW<a INT, b STRING NOT NULL>", Row([]Column{{Name: "a", Type: Int(), Nullable: true}, {Name: "b", Type: String()}}), "ROW<a INT, b STRING NOT NULL>"},
		{"ARRAY<ARRAY<ROW<x DECIMAL(20,2) NULL>>>", Array(Array(Row([]Column{{Name: "x", Type: Decimal(20, 2), Nullable: true}}), true), true),
			"ARRAY<ARRAY<ROW<x DECIMAL(20,2)>>>"},
	}
	for _, tt := range tests {
		got, err := ParseType(tt.in)
		if err != nil || !got.Equal(tt.want) || got.String() != tt.text {
			t.Errorf("ParseType(%q) = %v, %v; want %v", tt.in, got, err, tt.text)
		}
		back, err := ParseType(got.String())
		if err != nil || !back.Equal(got) {
			t.Errorf("ParseType(%q) = %v, %v", got.String(), back, err)
		}
	}
	if Array(Int(), true).Equal(Array(Int(), false)) || Row([]Column{{Name: "a", Type: Int()}}).Equal(Row([]Column{{Name: "b", Type: Int()}})) {
		t.Error("Equal ignores nullability or field names")
	}
	if e := Array(Int(), false).Elem(); e.Name != "element" || e.Nullable || !e.Type.Equal(Int()) {
		t.Errorf("Elem = %v", e)
	}
	if k, v := Map(String(), Int(), true).MapKey(), Map(String(), Int(), true).MapValue(); k.Name != "key" || k.Nullable || v.Name != "value" || !v.Nullable {
		t.Errorf("MapKey, MapValue = %v, %v", k, v)
	}
}

func TestNestedSchemaErrors(t *testing.T) {
	deep := strings.Repeat("ARRAY<", MaxNestingDepth+1) + "INT" + strings.Repeat(">", MaxNestingDepth+1)
	manyFields := "ROW<" + strings.Repeat("a INT, ", MaxColumns) + "b INT>"
	tests := []struct{ src, want string }{
		{"t " + deep, `column 1 "t": ` + strings.Repeat("ARRAY element: ", MaxNestingDepth) + "ARRAY: nesting deeper than 16 levels (MaxNestingDepth) at offset"},
		{"t ARRAY<INT", `column 1 "t": ARRAY: expected NOT NULL, NULL or ">", found the end at offset 11`},
		{"t ARRAY(3)", `column 1 "t": ARRAY: expected "<", found "(" at offset 7`},
		{"t MAP<INT>", `column 1 "t": MAP: expected NOT NULL or ",", found ">" at offset 9`},
		{"t MAP<INT NULL, INT>", `column 1 "t": MAP: keys are always NOT NULL`},
		{"t MAP<ARRAY<INT>, INT>", `column 1 "t": MAP key type ARRAY<INT> is nested; keys must be of a type that is not ARRAY, MAP or ROW`},
		{"t ROW<>", `column 1 "t": ROW: expected a field name, found ">" at offset 6`},
		{"t ROW<a INT, a STRING>", `column 1 "t": ROW field 2 "a": duplicate name (also field 1)`},
		{"t ROW<a DECIMAL(40,1)>", `column 1 "t": ROW field a: DECIMAL precision 40 out of range [1, 38]`},
		{"t " + manyFields, `nested fields (MaxColumns)`},
		{"t ARRAY<INT> NOT NULL PRIMARY KEY", `column 1 "t": ARRAY<INT> cannot be part of the primary key`},
		{"t " + strings.Repeat(" ", MaxSchemaTextBytes), "exceeds the limit of 4194304 (MaxSchemaTextBytes)"},
	}
	for _, tt := range tests {
		_, err := ParseSchema(tt.src)
		if err == nil || !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), tt.want) {
			name := tt.src
			if len(name) > 60 {
				name = name[:60]
			}
			t.Errorf("ParseSchema(%q): %v\nwant %q", name, err, tt.want)
		}
	}
	s := mustParseSchema(t, "id INT NOT NULL, tags ARRAY<STRING> NOT NULL")
	if _, err := NewKeyEncoder(s, []string{"tags"}); err == nil || !strings.Contains(err.Error(), `key: column 2 "tags": ARRAY<STRING> cannot be part of a key`) {
		t.Errorf("NewKeyEncoder of a nested column: %v", err)
	}
}

// TestNestedSchemaBinary: nested schemas encode as version 2, flat ones keep
// version 1, and hostile child counts and depths are refused.
func TestNestedSchemaBinary(t *testing.T) {
	flat := mustParseSchema(t, "id INT NOT NULL")
	b, _ := flat.MarshalBinary()
	if b[0] != 1 {
		t.Errorf("flat schema: version %d", b[0])
	}
	nested := mustParseSchema(t, "m MAP<STRING, ROW<a ARRAY<INT>>>")
	b, _ = nested.MarshalBinary()
	var back Schema
	if b[0] != 2 || back.UnmarshalBinary(b) != nil || !back.Equal(nested) {
		t.Errorf("nested schema: version %d, %v", b[0], back)
	}
	hostile := []byte{2, 1, 1, 'a', byte(KindArray), 0, 0, 0xff, 0xff, 0x03}
	if err := back.UnmarshalBinary(hostile); err == nil || !strings.Contains(err.Error(), "child count") {
		t.Errorf("hostile child count: %v", err)
	}
	deep := []byte{2, 1}
	for range MaxNestingDepth + 2 {
		deep = append(deep, 1, 'a', byte(KindArray), 0, 0, 1)
	}
	if err := back.UnmarshalBinary(deep); err == nil || !strings.Contains(err.Error(), "nesting deeper than 16") {
		t.Errorf("deep encoding: %v", err)
	}
}

// TestNestedRowErrors: corrupted nested payloads are refused with the path
// of the value at fault, and SetNested checks what it is given.
func TestNestedRowErrors(t *testing.T) {
	s := mustParseSchema(t, "tags ARRAY<STRING NOT NULL>")
	row, _ := AppendRowFromJSON(nil, s, []byte(`{"tags":["a","hello, world"]}`))
	corrupt := func(at int, b byte) []byte {
		c := bytes.Clone(row)
		c[at] = b
		return c
	}
	tests := []struct {
		row  []byte
		want string
	}{
		{corrupt(9, 0xff), `column "tags": invalid row: ARRAY<STRING NOT NULL>: element count 255 does not fit the 29 bytes that follow`},
		{corrupt(13, 1), `column "tags"[0]: invalid row: null in NOT NULL element`},
		{corrupt(13, 4), `column "tags": invalid row: ARRAY<STRING NOT NULL>: null bitmap has bits set past the last element`},
		{corrupt(14, 0xff), `column "tags"[0]: invalid row: STRING: not valid UTF-8`},
		{corrupt(22, 0x12), `column "tags"[1]: invalid row: STRING: payload at offset 18, want 17`},
	}
	for _, tt := range tests {
		err := ValidateRow(s, tt.row)
		if err == nil || !errors.Is(err, ErrInvalidRow) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateRow(%x): %v\nwant %q", tt.row, err, tt.want)
		}
	}
	m := mustParseSchema(t, "m MAP<INT, INT>")
	keys, _ := NewArrayEncoder(Int(), false)
	keys.AppendInt64(1)
	keys.AppendInt64(1)
	kp, _ := keys.Finish(nil)
	values, _ := NewArrayEncoder(Int(), true)
	values.AppendNull()
	values.AppendNull()
	vp, _ := values.Finish(nil)
	e, _ := NewRowEncoder(m)
	e.SetNested(0, appendMapPayload(nil, kp, vp))
	if _, err := e.Finish(nil); err == nil || !errors.Is(err, ErrInvalidValue) ||
		!strings.Contains(err.Error(), `column "m".keys[1]: nested value does not fit MAP<INT, INT>: INT: duplicate key (also key 0)`) {
		t.Errorf("SetNested of a map with a duplicate key: %v", err)
	}
	e.SetNested(0, kp[:5])
	if _, err := e.Finish(nil); err == nil || !strings.Contains(err.Error(), "map payload of 5 bytes") {
		t.Errorf("SetNested of a short map: %v", err)
	}
	flat, _ := NewRowEncoder(mustParseSchema(t, "a INT"))
	flat.SetNested(0, kp)
	if _, err := flat.Finish(nil); err == nil || !errors.Is(err, ErrWrongType) {
		t.Errorf("SetNested on an INT column: %v", err)
	}
	me, _ := NewMapEncoder(Int(), Int(), true)
	me.Keys().AppendInt64(1)
	if _, err := me.Finish(nil); err == nil || !strings.Contains(err.Error(), "1 keys but 0 values") {
		t.Errorf("MapEncoder with a missing value: %v", err)
	}
}
