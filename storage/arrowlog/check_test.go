package arrowlog

import (
	"errors"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestRowChecker: a timestamp of precision 7 to 9 outside what Arrow's
// nanoseconds hold is found at the top and inside arrays, maps and rows;
// a schema without one needs no checker; every checked row that passes
// encodes.
func TestRowChecker(t *testing.T) {
	if NewRowChecker(record.Schema{Columns: []record.Column{{Name: "at", Type: record.Timestamp(6)},
		{Name: "xs", Type: record.Array(record.TimestampLTZ(3), true)}}}) != nil {
		t.Fatal("a checker for a schema whose values all fit")
	}
	s, err := record.ParseSchema("id BIGINT NOT NULL, at TIMESTAMP(9), xs ARRAY<TIMESTAMP_LTZ(7)>, " +
		"m MAP<STRING, TIMESTAMP(9)>, r ROW<inner ROW<t TIMESTAMP(9)>>")
	if err != nil {
		t.Fatal(err)
	}
	c := NewRowChecker(s)
	const ok, late = `"2026-12-05T10:00:00.123456789"`, `"2300-01-01T00:00:00.000000001"`
	for _, tc := range []struct {
		name, row, column string
	}{
		{"all in range", `{"id":1,"at":` + ok + `,"xs":["2026-12-05T10:00:00.1234567Z"],"m":{"k":` + ok + `},"r":{"inner":{"t":` + ok + `}}}`, ""},
		{"nulls", `{"id":1,"xs":[null],"m":{"k":null},"r":{"inner":null}}`, ""},
		{"top", `{"id":1,"at":` + late + `}`, "at"},
		{"in an array", `{"id":1,"xs":["2026-01-01T00:00:00Z","1600-01-01T00:00:00Z"]}`, "xs"},
		{"a map value", `{"id":1,"m":{"k":` + late + `}}`, "m"},
		{"deep in a row", `{"id":1,"r":{"inner":{"t":` + late + `}}}`, "r.inner.t"},
	} {
		row, err := record.AppendRowFromJSON(nil, s, []byte(tc.row))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = c.Check(row)
		var te *TimestampRangeError
		switch {
		case tc.column == "" && err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		case tc.column != "" && (!errors.As(err, &te) || te.Column != tc.column):
			t.Fatalf("%s: %v, want a TimestampRangeError of %s", tc.name, err, tc.column)
		}
		enc, err := NewEncoder(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if encErr := enc.Append(row); (encErr == nil) != (tc.column == "") {
			t.Fatalf("%s: the checker says %v, the encoder %v", tc.name, err, encErr)
		}
	}
}
