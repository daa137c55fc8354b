package lakeengines

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedb/floe/tiering/lake"
)

// TestEnginesReadAlteredTable: a table that gained a nullable column
// (schema version 2) after a round wrote version 1's rows reads in
// iceberg-go's scan and in DuckDB as in Floe's own scan: the new column
// null in the rows of version 1, both those in the file written before
// it (which lacks the column) and those the log still held at the ALTER
// TABLE (which a later round upgraded and wrote with it, as null), and
// its values, null among them, in the rows of version 2; the same count
// and sums.
func TestEnginesReadAlteredTable(t *testing.T) {
	const v1 = "id BIGINT NOT NULL, name STRING, amount INT"
	const v2 = v1 + ", score BIGINT"
	w := newLakeWriter(t, t.TempDir(), "")
	w.commit(v1, []string{
		`{"id": 1, "name": "ann", "amount": 10}`,
		`{"id": 2, "name": null, "amount": null}`,
		`{"id": 3, "name": "bob", "amount": 5}`,
	})
	w.append(v1, []string{ // in the log at the ALTER TABLE, not yet tiered
		`{"id": 4, "name": "cy", "amount": 1}`,
		`{"id": 5, "name": "dee", "amount": 2}`,
	})
	w.append(v2, []string{
		`{"id": 6, "name": "eve", "amount": 3, "score": 60}`,
		`{"id": 7, "name": "fay", "amount": null, "score": null}`,
	})
	w.round()
	w.commit(v2, []string{
		`{"id": 8, "name": null, "amount": null, "score": -8}`,
		`{"id": 9, "name": "gus", "amount": 4, "score": 90}`,
	})
	columns := []string{"id", "name", "amount", "score", lake.OffsetColumn}
	floe := w.scanWithFloe()
	want := []string{
		"id=1 name=ann amount=10 score=(null) __offset=0",
		"id=2 name=(null) amount=(null) score=(null) __offset=1",
		"id=3 name=bob amount=5 score=(null) __offset=2",
		"id=4 name=cy amount=1 score=(null) __offset=3",
		"id=5 name=dee amount=2 score=(null) __offset=4",
		"id=6 name=eve amount=3 score=60 __offset=5",
		"id=7 name=fay amount=(null) score=(null) __offset=6",
		"id=8 name=(null) amount=(null) score=-8 __offset=7",
		"id=9 name=gus amount=4 score=90 __offset=8",
	}
	sameLines(t, "the rows written", want, floe.lines(columns...))
	// What every engine must count and sum as Floe's scan does.
	aggregates := func(rows readRows) string {
		return fmt.Sprintf("%d %d %d %d", len(rows), rows.count("score"), rows.sum(t, "score"), rows.sum(t, "amount"))
	}
	wantAggregates := aggregates(floe)

	t.Run("iceberg-go", func(t *testing.T) {
		rows := icebergRows(t, w.metadataURI(), iceberg.AlwaysTrue{}, columns...)
		sameLines(t, "iceberg-go's scan", rows.lines(columns...), floe.lines(columns...))
		if got := aggregates(rows); got != wantAggregates {
			t.Fatalf("iceberg-go's count(*), count(score), sum(score), sum(amount): %s; Floe's scan: %s", got, wantAggregates)
		}
		old := icebergRows(t, w.metadataURI(), iceberg.IsNull(iceberg.Reference("score")), "id")
		if got := strings.Join(old.lines("id"), " "); got != "id=1 id=2 id=3 id=4 id=5 id=7" {
			t.Fatalf("iceberg-go's rows where score is null: %s", got)
		}
	})

	t.Run("duckdb", func(t *testing.T) {
		files := w.dataFiles()
		if len(files) != 3 {
			t.Fatalf("the snapshot lists %d data files, want 3", len(files))
		}
		// The file of the first round has no score column: a data file
		// holds the columns of the schema it was written in. DuckDB reads
		// plain Parquet files, not the table's schema, and without
		// union_by_name it binds the columns of the first file listed: a
		// query of score fails to bind ("Referenced column not found")
		// when that is the first round's. So queryDuckDB reads them with
		// union_by_name: the union of their columns, matched by name, a
		// file lacking one reading it as NULL. That is what Iceberg's
		// schema evolution (by field id) gives as long as no column is
		// renamed, and Floe's ALTER TABLE only adds columns.
		lacking := 0
		for _, f := range files {
			described := strings.Join(queryDuckDB(t, []string{f}, "DESCRIBE SELECT * FROM LAKE"), "\n")
			if !strings.Contains("\n"+described, "\nscore ") {
				lacking++
			}
		}
		if lacking != 1 {
			t.Fatalf("%d data files lack score, want the first round's alone", lacking)
		}
		sameLines(t, "DuckDB", duckDBLines(t, files, columns...), floe.lines(columns...))
		got := queryDuckDB(t, files, "SELECT count(*), count(score), sum(score), sum(amount) FROM LAKE")
		if len(got) != 1 || got[0] != wantAggregates {
			t.Fatalf("DuckDB's count(*), count(score), sum(score), sum(amount): %q; Floe's scan: %s", got, wantAggregates)
		}
	})
}
