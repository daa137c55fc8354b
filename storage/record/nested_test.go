package record

import (
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
