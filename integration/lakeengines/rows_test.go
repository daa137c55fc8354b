package lakeengines

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readRows are the rows one reader returned, in no set order: each a
// column's name to its value as text, "(null)" for a null (as Arrow's
// ValueStr writes them: dates as 2006-01-02, numbers in decimal).
type readRows []map[string]string

// null is a null value's text.
const null = "(null)"

// lines renders each row as "name=value ..." of columns, sorted: two
// readers agree on the rows when their lines are equal.
func (rs readRows) lines(columns ...string) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		parts := make([]string, len(columns))
		for i, c := range columns {
			v, ok := r[c]
			if !ok {
				v = "(missing)"
			}
			parts[i] = c + "=" + v
		}
		out = append(out, strings.Join(parts, " "))
	}
	slices.Sort(out)
	return out
}

// where is the rows whose column holds value.
func (rs readRows) where(column, value string) readRows {
	var out readRows
	for _, r := range rs {
		if r[column] == value {
			out = append(out, r)
		}
	}
	return out
}

// sum adds up an integer column's values, nulls left out, as SQL's sum.
func (rs readRows) sum(t *testing.T, column string) int64 {
	t.Helper()
	total := int64(0)
	for _, r := range rs {
		v, ok := r[column]
		if !ok {
			t.Fatalf("a row without %s: %v", column, r)
		}
		if v == null {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q is not an integer", column, v)
		}
		total += n
	}
	return total
}

// count is the rows whose column is not null, as SQL's count(column).
func (rs readRows) count(column string) int {
	n := 0
	for _, r := range rs {
		if v, ok := r[column]; ok && v != null {
			n++
		}
	}
	return n
}

// sameLines fails the test when a reader's lines are not Floe's.
func sameLines(t *testing.T, reader string, got, floe []string) {
	t.Helper()
	if !slices.Equal(got, floe) {
		t.Fatalf("%s read %d rows:\n  %s\nFloe's scan reads %d:\n  %s", reader, len(got), strings.Join(got, "\n  "),
			len(floe), strings.Join(floe, "\n  "))
	}
}
