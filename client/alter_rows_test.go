package client

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// addNote is the ALTER of the tests here: a nullable column at the end.
var addNote = AlterTable{AddColumns: []record.Column{{Name: "note", Type: record.String(), Nullable: true}}}

// upsertJSON upserts rows given as JSON objects with w and waits for them.
func upsertJSON(t *testing.T, w *UpsertWriter, rows ...string) {
	t.Helper()
	ctx := guardCtx(t)
	for _, r := range rows {
		if _, err := w.UpsertJSON(ctx, []byte(r)); err != nil {
			t.Fatalf("upsert %s: %v", r, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPrimaryKeyReadsAcrossAddColumn: after an ADD COLUMN, lookups, prefix
// lookups and row scans of a handle made after it give the new column null
// for the rows stored before (and for those a writer made before it
// upserts, which keeps working) and the value for rows upserted with it; a
// handle made before reads every row in its own schema.
func TestPrimaryKeyReadsAcrossAddColumn(t *testing.T) {
	fc, c := startCluster(t)
	old := fc.createTable(c, "users", "region INT NOT NULL, id BIGINT NOT NULL, name STRING, PRIMARY KEY (region, id)", 1, 1, "region")
	oldWriter := newUpsertWriter(t, old, UpsertWriterOptions{})
	row := func(id int, note string) string {
		if note == "" {
			return fmt.Sprintf(`{"region":1,"id":%d,"name":"u%d"}`, id, id)
		}
		return fmt.Sprintf(`{"region":1,"id":%d,"name":"u%d","note":"%s"}`, id, id, note)
	}
	for id := range 10 {
		upsertJSON(t, oldWriter, row(id, ""))
	}
	tbl := alter(t, c, old, addNote)
	// The old writer keeps writing, in its schema: a new key, and an
	// update of a stored one.
	upsertJSON(t, oldWriter, row(20, ""), row(3, ""))
	newWriter := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	for id := 5; id < 15; id++ {
		upsertJSON(t, newWriter, row(id, fmt.Sprintf("n%d", id)))
	}
	want := map[int]string{} // id → the row as a handle of the new schema reads it
	for _, id := range []int{0, 1, 2, 3, 4, 20} {
		want[id] = fmt.Sprintf(`{"region":1,"id":%d,"name":"u%d","note":null}`, id, id)
	}
	for id := 5; id < 15; id++ {
		want[id] = fmt.Sprintf(`{"region":1,"id":%d,"name":"u%d","note":"n%d"}`, id, id, id)
	}

	ctx := guardCtx(t)
	l := newLookuper(t, tbl, LookuperOptions{})
	for id, w := range want {
		got, ok, err := l.LookupJSON(ctx, fmt.Appendf(nil, `{"region":1,"id":%d}`, id))
		if err != nil || !ok || rowJSON(t, tbl, got) != w {
			t.Fatalf("lookup of %d: %s %v %v; want %s", id, rowJSON(t, tbl, got), ok, err, w)
		}
	}
	oldLookuper := newLookuper(t, old, LookuperOptions{})
	for _, id := range []int{0, 7, 20} {
		got, ok, err := oldLookuper.LookupJSON(ctx, fmt.Appendf(nil, `{"region":1,"id":%d}`, id))
		if w := fmt.Sprintf(`{"region":1,"id":%d,"name":"u%d"}`, id, id); err != nil || !ok || rowJSON(t, old, got) != w {
			t.Fatalf("lookup of %d with the old handle: %s %v %v; want %s", id, rowJSON(t, old, got), ok, err, w)
		}
	}

	wantAll := make([]string, 0, len(want))
	for _, id := range slices.Sorted(maps.Keys(want)) {
		wantAll = append(wantAll, want[id])
	}
	prefix, err := l.PrefixLookupJSON(ctx, []byte(`{"region":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonRows(t, tbl, prefix); !slices.Equal(got, wantAll) {
		t.Fatalf("prefix lookup:\n%v\nwant\n%v", got, wantAll)
	}
	scanned, _ := scanBucket(t, tbl, 0, RowScannerOptions{})
	if got := jsonRows(t, tbl, scanned); !slices.Equal(got, wantAll) {
		t.Fatalf("row scan:\n%v\nwant\n%v", got, wantAll)
	}
}

// jsonRows is rowJSON of every row.
func jsonRows(t *testing.T, tbl *Table, rows [][]byte) []string {
	t.Helper()
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowJSON(t, tbl, r)
	}
	return out
}

// TestLogReadsAcrossAddColumn: a scanner polling a log table while an ALTER
// adds a column, and a new writer writes it, reads on; an append writer
// made before the ALTER keeps working; a scanner of a handle made after
// reads the new column null in the rows written before and the values
// written after.
func TestLogReadsAcrossAddColumn(t *testing.T) {
	fc, c := startCluster(t)
	old := fc.createTable(c, "events", "id BIGINT NOT NULL, page STRING", 1, 1)
	oldWriter := newWriter(t, old, AppendWriterOptions{})
	ctx := guardCtx(t)
	appendRows := func(w *AppendWriter, from, to int, note bool) {
		t.Helper()
		for id := from; id < to; id++ {
			obj := fmt.Sprintf(`{"id":%d,"page":"/p%d"}`, id, id)
			if note {
				obj = fmt.Sprintf(`{"id":%d,"page":"/p%d","note":"n%d"}`, id, id, id)
			}
			if _, err := w.AppendJSON(ctx, []byte(obj)); err != nil {
				t.Fatalf("append %s: %v", obj, err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	appendRows(oldWriter, 0, 10, false)
	polling := newScanner(t, old, LogScannerOptions{})
	if err := polling.Subscribe(0, Earliest()); err != nil {
		t.Fatal(err)
	}
	before := pollUntil(t, polling, 10)

	tbl := alter(t, c, old, addNote)
	appendRows(oldWriter, 10, 15, false)
	appendRows(newWriter(t, tbl, AppendWriterOptions{}), 15, 25, true)

	after := pollUntil(t, polling, 15)
	for i, r := range append(before, after...) {
		want := fmt.Sprintf(`{"id":%d,"page":"/p%d"}`, i, i)
		if got := rowJSON(t, old, r.Row); got != want {
			t.Fatalf("polling scanner, row %d: %s; want %s", i, got, want)
		}
	}
	for i, m := range scanJSON(t, tbl, LogScannerOptions{}, 25) {
		want := any(nil)
		if i >= 15 {
			want = fmt.Sprintf("n%d", i)
		}
		if int(m["id"].(float64)) != i || m["note"] != want {
			t.Fatalf("scanner of the new handle, row %d: %v; want note %v", i, m, want)
		}
	}
}
