package lakeengines

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedb/floe/tiering/lake"
)

// TestEnginesReadPartitionedTable: a table partitioned by a DATE column,
// each day a partition of its own (a physical table with its own id and
// its own bucket) written in two rounds, reads in iceberg-go's scan and
// in DuckDB as in Floe's own scan: the same rows with their days and
// offsets, the same count and sum, and the same rows and sum for each
// day. iceberg-go reads each day through a row filter on the partition
// column, and plans for it exactly the files Floe's index holds for that
// day's physical table: it prunes by the partition values Floe's
// manifests carry. DuckDB takes dt from the files' hive-style paths
// (dt=2026-12-01/), its default for such paths, over the files' own dt
// column: it checks the paths Floe writes the partitions' files under.
func TestEnginesReadPartitionedTable(t *testing.T) {
	const schema = "id BIGINT NOT NULL, dt DATE NOT NULL, amount INT, name STRING"
	w := newLakeWriter(t, t.TempDir(), "dt")
	w.commit(schema, []string{
		`{"id": 1, "dt": "2026-12-01", "amount": 10, "name": "ann"}`,
		`{"id": 2, "dt": "2026-12-02", "amount": null, "name": null}`,
		`{"id": 3, "dt": "2026-12-01", "amount": -4, "name": "bob"}`,
		`{"id": 4, "dt": "2026-12-02", "amount": 20, "name": "cy"}`,
	})
	w.commit(schema, []string{
		`{"id": 5, "dt": "2026-12-03", "amount": 100, "name": "dee"}`,
		`{"id": 6, "dt": "2026-12-01", "amount": 1, "name": null}`,
		`{"id": 7, "dt": "2026-12-02", "amount": null, "name": "eve"}`,
		`{"id": 8, "dt": "2026-12-03", "amount": 2, "name": "fay"}`,
	})
	// Each day's rows, count and sum of amount, as written.
	days := []struct {
		dt        string
		ids       string
		rows      int
		sumAmount int64
	}{
		{"2026-12-01", "1 3 6", 3, 7},
		{"2026-12-02", "2 4 7", 3, 20},
		{"2026-12-03", "5 8", 2, 102},
	}
	columns := []string{"id", "dt", "amount", "name", lake.OffsetColumn}
	floe := w.scanWithFloe()
	if len(floe) != 8 || floe.sum(t, "amount") != 129 {
		t.Fatalf("Floe's scan reads %d rows of sum(amount) %d, want the 8 written, 129", len(floe), floe.sum(t, "amount"))
	}
	for _, d := range days {
		var ids []string
		for _, line := range floe.where("dt", d.dt).lines("id") {
			ids = append(ids, strings.TrimPrefix(line, "id="))
		}
		if strings.Join(ids, " ") != d.ids {
			t.Fatalf("Floe's scan reads ids %v for dt %s, want %s", ids, d.dt, d.ids)
		}
	}
	ix := w.index()

	t.Run("iceberg-go", func(t *testing.T) {
		uri := w.metadataURI()
		all := icebergRows(t, uri, iceberg.AlwaysTrue{}, columns...)
		sameLines(t, "iceberg-go's scan", all.lines(columns...), floe.lines(columns...))
		if got, want := all.sum(t, "amount"), floe.sum(t, "amount"); got != want {
			t.Fatalf("iceberg-go's sum(amount) is %d, Floe's %d", got, want)
		}
		for _, d := range days {
			filter := iceberg.EqualTo(iceberg.Reference("dt"), d.dt)
			var planned []string
			scan := icebergScan(t, uri, filter, columns...)
			tasks, err := scan.PlanFiles(t.Context())
			scan.Close()
			if err != nil {
				t.Fatalf("iceberg-go plans dt = %s: %v", d.dt, err)
			}
			for _, task := range tasks {
				planned = append(planned, path.Base(task.File.FilePath()))
			}
			var held []string
			for _, f := range ix.Files(lake.BucketKey{PhysicalID: w.parts[d.dt]}) {
				held = append(held, path.Base(f.Key))
			}
			slices.Sort(planned)
			slices.Sort(held)
			if !slices.Equal(planned, held) {
				t.Fatalf("iceberg-go plans for dt = %s the files %v; Floe's index holds %v for physical table %d",
					d.dt, planned, held, w.parts[d.dt])
			}
			rows := icebergRows(t, uri, filter, columns...)
			want := floe.where("dt", d.dt)
			sameLines(t, "iceberg-go's scan of dt = "+d.dt, rows.lines(columns...), want.lines(columns...))
			if len(rows) != d.rows || rows.sum(t, "amount") != d.sumAmount {
				t.Fatalf("iceberg-go reads %d rows of sum(amount) %d for dt = %s, want %d, %d", len(rows), rows.sum(t, "amount"),
					d.dt, d.rows, d.sumAmount)
			}
		}
	})

	t.Run("duckdb", func(t *testing.T) {
		files := w.dataFiles()
		if len(files) != 5 { // two rounds over the first two days, one over the third
			t.Fatalf("the snapshot lists %d data files, want 5", len(files))
		}
		sameLines(t, "DuckDB", duckDBLines(t, files, columns...), floe.lines(columns...))
		got := queryDuckDB(t, files, "SELECT count(*), sum(amount) FROM LAKE")
		if want := fmt.Sprintf("%d %d", len(floe), floe.sum(t, "amount")); len(got) != 1 || got[0] != want {
			t.Fatalf("DuckDB's count(*), sum(amount): %q; Floe's scan: %q", got, want)
		}
		var want []string
		for _, d := range days {
			rows := floe.where("dt", d.dt)
			if len(rows) != d.rows || rows.sum(t, "amount") != d.sumAmount {
				t.Fatalf("Floe's scan reads %d rows of sum(amount) %d for dt %s, want %d, %d", len(rows), rows.sum(t, "amount"),
					d.dt, d.rows, d.sumAmount)
			}
			want = append(want, fmt.Sprintf("%s %d %d", d.dt, len(rows), rows.sum(t, "amount")))
		}
		byDay := queryDuckDB(t, files, "SELECT CAST(dt AS VARCHAR), count(*), sum(amount) FROM LAKE GROUP BY dt ORDER BY dt")
		if !slices.Equal(byDay, want) {
			t.Fatalf("DuckDB by dt: %q; Floe's scan: %q", byDay, want)
		}
	})
}
