package record

import (
	"errors"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestProjectRowProperty: a random row cut to a random list of its columns
// (any order, some left out, some places null) is a valid row of the
// projected schema holding exactly those values.
func TestProjectRowProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genSchema(t)
		e, err := NewRowEncoder(s)
		if err != nil {
			t.Fatalf("NewRowEncoder: %v", err)
		}
		want := make([]any, len(s.Columns))
		for i, c := range s.Columns {
			var set func()
			want[i], set = genCell(t, e, i, c, "value "+strconv.Itoa(i))
			set()
		}
		row, err := e.Finish(nil)
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
		picked := rapid.Permutation(indexes(len(s.Columns))).Draw(t, "order")
		picked = picked[:rapid.IntRange(0, len(picked)).Draw(t, "kept")]
		var columns []int
		out := Schema{}
		for _, c := range picked {
			if rapid.Bool().Draw(t, "null before "+strconv.Itoa(c)) {
				columns = append(columns, -1)
				out.Columns = append(out.Columns, Column{Name: "absent_" + strconv.Itoa(len(columns)), Type: BigInt(), Nullable: true})
			}
			columns = append(columns, c)
			out.Columns = append(out.Columns, s.Columns[c])
		}
		if len(columns) == 0 {
			columns = []int{-1}
			out.Columns = []Column{{Name: "absent", Type: String(), Nullable: true}}
		}
		got, err := ProjectRow(s, row, columns, []byte("prefix"))
		if err != nil {
			t.Fatalf("ProjectRow(%v): %v", columns, err)
		}
		if string(got[:6]) != "prefix" {
			t.Fatalf("ProjectRow did not append to dst")
		}
		got = got[6:]
		if err := ValidateRow(out, got); err != nil {
			t.Fatalf("projected row %v is not valid: %v", columns, err)
		}
		v := NewRowView(out, got)
		for j, c := range columns {
			if c == -1 || want[c] == nil {
				if !v.IsNull(j) {
					t.Fatalf("column %d (source %d) is not null", j, c)
				}
				continue
			}
			if v.IsNull(j) {
				t.Fatalf("column %d (source %d) is null", j, c)
			}
			if g := viewValue(v, j, out.Columns[j].Type); g != want[c] {
				t.Fatalf("column %d (source %d, %s): got %v, want %v", j, c, out.Columns[j].Type, g, want[c])
			}
		}
	})
}

func TestProjectRowRefuses(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "a", Type: BigInt()}, {Name: "b", Type: String(), Nullable: true}}}
	row, err := AppendRowFromJSON(nil, s, []byte(`{"a":1,"b":"a string longer than seven bytes"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ProjectRow(s, row, []int{2}, nil); !errors.Is(err, ErrBadProjection) {
		t.Fatalf("column out of range: %v", err)
	}
	if _, err := ProjectRow(s, row[:5], []int{0}, nil); !errors.Is(err, ErrBadProjection) {
		t.Fatalf("short row: %v", err)
	}
	if _, err := ProjectRow(s, row[:len(row)-1], []int{1}, nil); !errors.Is(err, ErrBadProjection) {
		t.Fatalf("payload past the row's end: %v", err)
	}
}
