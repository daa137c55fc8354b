package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// writeJSON appends rows given as JSON objects with a new writer of tbl,
// and waits for them.
func writeJSON(t *testing.T, tbl *Table, rows ...string) {
	t.Helper()
	w := newWriter(t, tbl, AppendWriterOptions{})
	ctx := guardCtx(t)
	for _, r := range rows {
		if _, err := w.AppendJSON(ctx, []byte(r)); err != nil {
			t.Fatalf("append %s: %v", r, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// alter alters the test's table and opens it again.
func alter(t *testing.T, c *Client, tbl *Table, a AlterTable) *Table {
	t.Helper()
	if _, err := c.Admin().AlterTable(guardCtx(t), tbl.info.Database, tbl.info.Name, a); err != nil {
		t.Fatalf("alter: %v", err)
	}
	next, err := c.Table(guardCtx(t), tbl.info.Database, tbl.info.Name)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// scanJSON reads every row of bucket 0 with opts, as JSON objects.
func scanJSON(t *testing.T, tbl *Table, opts LogScannerOptions, n int) []map[string]any {
	t.Helper()
	s := newScanner(t, tbl, opts)
	if err := s.Subscribe(0, Earliest()); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range pollUntil(t, s, n) {
		js, err := record.AppendRowJSON(nil, s.Schema(), r.Row)
		if err != nil {
			t.Fatalf("offset %d: %v", r.Offset, err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestScannerColumns: a scanner of some columns reads them, in its order,
// across Arrow batches (cut by the leader), row batches (cut by the
// scanner) and an added column (null in the batches written before it);
// the leader's answer holds projected batches.
func TestScannerColumns(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "clicks", "id BIGINT NOT NULL, page STRING, n INT, tags ARRAY<STRING>", 1, 1)
	if tbl.LogFormat() != "arrow" {
		t.Fatalf("a new log table has log.format %q, want arrow", tbl.LogFormat())
	}
	row := func(id int, extra string) string {
		return fmt.Sprintf(`{"id":%d,"page":"/page/%d/%s","n":%d,"tags":["t%d","u"]%s}`, id, id, strings.Repeat("p", 200), id*2, id%3, extra)
	}
	var rows []string
	for id := range 100 {
		rows = append(rows, row(id, ""))
	}
	writeJSON(t, tbl, rows...)
	tbl = alter(t, c, tbl, AlterTable{Set: map[string]string{"log.format": "row"}})
	rows = rows[:0]
	for id := 100; id < 150; id++ {
		rows = append(rows, row(id, ""))
	}
	writeJSON(t, tbl, rows...)
	tbl = alter(t, c, tbl, AlterTable{Set: map[string]string{"log.format": "arrow"},
		AddColumns: []record.Column{{Name: "extra", Type: record.String(), Nullable: true}}})
	rows = rows[:0]
	for id := 150; id < 200; id++ {
		rows = append(rows, row(id, fmt.Sprintf(`,"extra":"e%d"`, id)))
	}
	writeJSON(t, tbl, rows...)

	projected := make(chan bool, 1)
	fc.leaderProxy(tbl, 0).RewriteReply(testcluster.RPCFetch, func(msg []byte) []byte {
		return rewriteFetched(t, msg, func(b *pb.FetchedBucket) {
			if len(b.Records) > 0 {
				projected <- record.Batch(b.Records).Projected()
			}
		})
	})
	got := scanJSON(t, tbl, LogScannerOptions{Columns: []string{"extra", "id", "tags"}}, 200)
	if !<-projected {
		t.Fatal("the leader answered a projected fetch of an Arrow batch whole")
	}
	for i, m := range got {
		if len(m) != 3 {
			t.Fatalf("row %d has columns %v, want extra, id, tags", i, m)
		}
		if id := m["id"].(float64); int(id) != i {
			t.Fatalf("row %d: id %v", i, id)
		}
		if tags := fmt.Sprint(m["tags"]); tags != fmt.Sprintf("[t%d u]", i%3) {
			t.Fatalf("row %d: tags %s", i, tags)
		}
		switch {
		case i < 150 && m["extra"] != nil:
			t.Fatalf("row %d, written before extra was added: extra %v", i, m["extra"])
		case i >= 150 && m["extra"] != fmt.Sprintf("e%d", i):
			t.Fatalf("row %d: extra %v", i, m["extra"])
		}
	}

	// Every column, in the table's order: the same rows as written.
	all := scanJSON(t, tbl, LogScannerOptions{}, 200)
	if len(all[0]) != 5 || all[199]["page"] != fmt.Sprintf("/page/199/%s", strings.Repeat("p", 200)) {
		t.Fatalf("full rows: first %v, last %v", all[0], all[199])
	}

	if _, err := tbl.NewLogScanner(LogScannerOptions{Columns: []string{"id", "nope"}}); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Fatalf("unknown column: %v", err)
	}
	if _, err := tbl.NewLogScanner(LogScannerOptions{Columns: []string{"id", "id"}}); err == nil {
		t.Fatal("a column asked for twice was taken")
	}
}

// TestAppendRefusesWhatArrowCannotHold: in an arrow table a row with a
// TIMESTAMP(9) Arrow's nanoseconds cannot hold is refused by Append alone,
// and the rows around it are written; a row table takes it.
func TestAppendRefusesWhatArrowCannotHold(t *testing.T) {
	fc, c := startCluster(t)
	for _, format := range []string{"arrow", "row"} {
		_, err := fc.CreateTable(t.Context(), testcluster.TableSpec{Database: fc.db, Name: "ts_" + format,
			Schema: "id BIGINT NOT NULL, at TIMESTAMP(9)", Buckets: 1, Replication: 1, Properties: map[string]string{"log.format": format}})
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := c.Table(t.Context(), fc.db, "ts_"+format)
		if err != nil {
			t.Fatal(err)
		}
		w := newWriter(t, tbl, AppendWriterOptions{})
		ctx := guardCtx(t)
		for id, at := range []string{"2026-12-05T10:00:00.123456789", "2300-01-01T00:00:00", "2026-12-06T00:00:00"} {
			_, err := w.AppendJSON(ctx, fmt.Appendf(nil, `{"id":%d,"at":%q}`, id, at))
			var te *arrowlog.TimestampRangeError
			if refused := errors.As(err, &te); refused != (format == "arrow" && id == 1) {
				t.Fatalf("%s table, %s: %v", format, at, err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatalf("%s table: flush: %v", format, err)
		}
		want := map[string]int{"arrow": 2, "row": 3}[format]
		if got := len(scanJSON(t, tbl, LogScannerOptions{}, want)); got != want {
			t.Fatalf("%s table holds %d rows, want %d", format, got, want)
		}
	}
}
