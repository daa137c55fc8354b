package lakeengines

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/floedb/floe/tiering/lake"
)

// dataFiles lists the Parquet files of the table's current snapshot, as
// its manifests name them, as local paths.
func (w *lakeWriter) dataFiles() []string {
	var out []string
	for _, e := range w.manifestEntries() {
		if e.Status != manifestDeleted {
			out = append(out, localPath(e.File.Path))
		}
	}
	return out
}

// manifestDeleted is the status of a manifest entry whose file the
// snapshot no longer has (the spec's DELETED, 2).
const manifestDeleted = 2

// manifestEntries is the entries of every manifest of the table's
// current snapshot, files it no longer has among them.
func (w *lakeWriter) manifestEntries() []lake.ManifestEntry {
	t := w.t
	ctx := context.Background()
	manifests, err := w.tbl.ReadManifestList(ctx, w.meta.CurrentSnapshot().ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	var out []lake.ManifestEntry
	for _, m := range manifests {
		entries, err := w.tbl.ReadManifest(ctx, m.Path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entries...)
	}
	return out
}

// localPath is a data file's path in the local folder store the tests
// write to, from its URI in a manifest.
func localPath(uri string) string { return strings.TrimPrefix(uri, "file://") }

// queryDuckDB runs a query over the table's current data files (the
// Parquet files its manifests list, read with DuckDB's read_parquet, by
// column name) and returns its rows as "a b c" strings.
func queryDuckDB(t *testing.T, files []string, query string) []string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	from := "read_parquet([" + strings.Join(quoted, ", ") + "], union_by_name = true)"
	rows, err := db.Query(strings.ReplaceAll(query, "LAKE", from))
	if err != nil {
		t.Fatalf("duckdb: %v", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDuckDBReadsLogTable: DuckDB, over the Parquet files the current
// snapshot lists, counts and sums what Floe wrote, the column added by
// ALTER TABLE null in the files written before it, and agrees with
// iceberg-go's scan.
func TestDuckDBReadsLogTable(t *testing.T) {
	w := newLakeWriter(t, t.TempDir(), "region")
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT", []string{
		`{"id": 1, "region": "eu", "amount": 10}`,
		`{"id": 2, "region": "us", "amount": null}`,
		`{"id": 3, "region": "eu", "amount": -5}`,
	})
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT, note STRING", []string{
		`{"id": 4, "region": "us", "amount": 7, "note": "late"}`,
	})
	files := w.dataFiles()
	if len(files) != 3 {
		t.Fatalf("the snapshot lists %d data files, want 3", len(files))
	}
	got := queryDuckDB(t, files, "SELECT count(*), sum(id), sum(amount), count(note), max(__offset) FROM LAKE")
	if want := "4 10 12 1 1"; len(got) != 1 || got[0] != want {
		t.Fatalf("duckdb: %q, want %q", got, want)
	}
	byRegion := queryDuckDB(t, files, "SELECT region, count(*) FROM LAKE GROUP BY region ORDER BY region")
	if strings.Join(byRegion, ",") != "eu 2,us 2" {
		t.Fatalf("duckdb by region: %q", byRegion)
	}
	ice := scanWithIceberg(t, w.metadataURI(), "id")
	if len(ice) != 4 {
		t.Fatalf("iceberg-go reads %d rows where DuckDB counts 4", len(ice))
	}
}

// duckDBLines reads columns of every row of the table's current data
// files with DuckDB, rendered as readRows.lines renders them: each value
// cast to text by DuckDB, "(null)" for a null.
func duckDBLines(t *testing.T, files []string, columns ...string) []string {
	t.Helper()
	parts := make([]string, len(columns))
	for i, c := range columns {
		parts[i] = fmt.Sprintf(`'%s=' || coalesce(CAST("%s" AS VARCHAR), '%s')`, c, c, null)
	}
	out := queryDuckDB(t, files, "SELECT concat_ws(' ', "+strings.Join(parts, ", ")+") FROM LAKE")
	slices.Sort(out)
	return out
}

// TestEnginesReadEveryEncoding: a file whose first rows make the writer
// pick each of its encodings (distinct integers delta-encoded, distinct
// strings without a dictionary, repeated strings with one, random bytes
// stored uncompressed) reads back in DuckDB and iceberg-go as written.
func TestEnginesReadEveryEncoding(t *testing.T) {
	const n = 5000
	w := newLakeWriter(t, t.TempDir(), "")
	rng := rand.New(rand.NewPCG(1, 2))
	lines := make([]string, n)
	var wantSum, wantLen int64
	for i := range n {
		blob := make([]byte, 48+i%16)
		for j := range blob {
			blob[j] = byte(rng.Uint32())
		}
		wantSum += int64(i) * 7
		wantLen += int64(len(blob))
		lines[i] = fmt.Sprintf(`{"id": %d, "country": %q, "url": "/p/%d?session=%x", "blob": %q}`,
			int64(i)*7, []string{"de", "fr", "nl"}[i%3], i, rng.Uint64(), base64.StdEncoding.EncodeToString(blob))
	}
	w.commit("id BIGINT NOT NULL, country STRING NOT NULL, url STRING, blob BYTES", lines)
	files := w.dataFiles()
	if len(files) != 1 {
		t.Fatalf("%d data files, want 1", len(files))
	}
	pf, err := file.OpenParquetFile(files[0], false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	encodings := map[string]string{}
	for c := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		encodings[cc.PathInSchema().String()] = fmt.Sprint(cc.HasDictionaryPage(), cc.Compression(), slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked))
	}
	for col, want := range map[string]string{"id": "false ZSTD true", "country": "true ZSTD false", "url": "false ZSTD false", "blob": "false UNCOMPRESSED false", "__bucket": "false ZSTD true"} {
		if encodings[col] != want {
			t.Errorf("column %s: dictionary, codec, delta %q; want %q", col, encodings[col], want)
		}
	}
	got := queryDuckDB(t, files, "SELECT count(*), sum(id), count(DISTINCT url), sum(octet_length(blob)), count(DISTINCT country) FROM LAKE")
	if want := fmt.Sprintf("%d %d %d %d 3", n, wantSum, n, wantLen); len(got) != 1 || got[0] != want {
		t.Fatalf("duckdb: %q, want %q", got, want)
	}
	byCountry := queryDuckDB(t, files, "SELECT country, count(*) FROM LAKE GROUP BY country ORDER BY country")
	if strings.Join(byCountry, ",") != "de 1667,fr 1667,nl 1666" {
		t.Fatalf("duckdb by country: %q", byCountry)
	}
	ice := scanWithIceberg(t, w.metadataURI(), "id")
	if len(ice) != n {
		t.Fatalf("iceberg-go reads %d rows, want %d", len(ice), n)
	}
}
