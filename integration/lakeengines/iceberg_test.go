package lakeengines

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// lakeWriter commits rows to a lake table the way the cluster's tiering
// does: a data file per partition value per commit, then a snapshot.
type lakeWriter struct {
	t       *testing.T
	tbl     *lake.Table
	meta    *lake.Metadata
	version int
	lastID  int
	offset  int64
	partBy  string
}

func newLakeWriter(t *testing.T, dir, partitionBy string) *lakeWriter {
	store, err := tiering.NewFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &lakeWriter{t: t, tbl: lake.NewTable(store, "wh/app/events"), partBy: partitionBy}
}

// commit writes rows (JSON objects of schema) as one snapshot; the schema
// may have columns added since the last commit.
func (w *lakeWriter) commit(schema string, rows []string) {
	t := w.t
	ctx := context.Background()
	s, err := record.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	var prev *lake.Schema
	if w.meta != nil {
		prev = w.meta.CurrentSchema()
	}
	ls, err := lake.NewSchema(0, s, prev, &w.lastID)
	if err != nil {
		t.Fatal(err)
	}
	create := func() (*lake.Metadata, error) {
		var by []string
		if w.partBy != "" {
			by = []string{w.partBy}
		}
		return lake.NewMetadata(w.tbl.Location(), "0b9a3f50-7a8e-4d0b-9a51-8a4b7c0d2e13", ls, w.lastID, by, nil, 1000)
	}
	base := w.meta
	spec := lake.PartitionSpec{}
	if base != nil {
		base.SetSchema(ls, w.lastID)
		spec = base.Spec()
	} else {
		m, err := create()
		if err != nil {
			t.Fatal(err)
		}
		spec = m.Spec()
	}
	groups := map[string][][]byte{}
	var order []string
	partCol := -1
	if w.partBy != "" {
		partCol, _ = s.ColumnIndex(w.partBy)
	}
	for _, js := range rows {
		row, err := record.AppendRowFromJSON(nil, s, []byte(js))
		if err != nil {
			t.Fatalf("row %s: %v", js, err)
		}
		key := ""
		if partCol >= 0 {
			key = record.NewRowView(s, row).String(partCol)
		}
		if groups[key] == nil {
			order = append(order, key)
		}
		groups[key] = append(groups[key], row)
	}
	var files []lake.DataFile
	for _, key := range order {
		fb, err := lake.NewFileBuilder(s, ls)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range groups[key] {
			if err := fb.Append(row, 0, w.offset, 1_700_000_000_000+w.offset); err != nil {
				t.Fatal(err)
			}
			w.offset++
		}
		body, df, err := fb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		var part []lake.PartitionValue
		if partCol >= 0 {
			part = []lake.PartitionValue{{Type: "string", Value: key}}
		}
		if df, err = w.tbl.PutDataFile(ctx, w.tbl.DataFileKey(spec, part, fmt.Sprintf("b0-%d", w.offset)), body, df, part); err != nil {
			t.Fatal(err)
		}
		files = append(files, df)
	}
	staged, err := w.tbl.StageAppend(ctx, base, w.version, create, files, map[string]string{"floe.log-offsets": fmt.Sprintf(`{"0":%d}`, w.offset)}, 2000+w.offset)
	if err != nil {
		t.Fatal(err)
	}
	w.version++
	if err := w.tbl.Publish(ctx, w.version, staged.Key); err != nil {
		t.Fatal(err)
	}
	if w.meta, err = w.tbl.ReadVersion(ctx, w.version); err != nil {
		t.Fatal(err)
	}
}

// metadataURI is the current version's metadata file, as engines open it.
func (w *lakeWriter) metadataURI() string {
	return strings.TrimSuffix(w.tbl.Location(), "") + fmt.Sprintf("/metadata/v%d.metadata.json", w.version)
}

// scanWithIceberg reads the table's current snapshot with iceberg-go and
// returns its rows as "col=value" strings in column order, sorted.
func scanWithIceberg(t *testing.T, metadataURI string, columns ...string) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := table.NewFromLocation(ctx, []string{"app", "events"}, metadataURI, iceio.LoadFSFunc(nil, metadataURI), nil)
	if err != nil {
		t.Fatalf("iceberg-go opens %s: %v", metadataURI, err)
	}
	at, err := tbl.Scan(table.WithSelectedFields(columns...)).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("iceberg-go scans %s: %v", metadataURI, err)
	}
	defer at.Release()
	return tableRows(at)
}

// tableRows renders an Arrow table's rows as "name=value ..." strings,
// sorted.
func tableRows(at arrow.Table) []string {
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			var parts []string
			for c := range int(rec.NumCols()) {
				parts = append(parts, rec.ColumnName(c)+"="+rec.Column(c).ValueStr(i))
			}
			out = append(out, strings.Join(parts, " "))
		}
	}
	sort.Strings(out)
	return out
}

// TestIcebergGoReadsLogTable: iceberg-go's scan of a partitioned table
// Floe wrote in two commits, with a column added between them, returns
// every row once with the values written, the added column null in the
// rows written before it, and Floe's system columns.
func TestIcebergGoReadsLogTable(t *testing.T) {
	w := newLakeWriter(t, t.TempDir(), "region")
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT, at TIMESTAMP(3)", []string{
		`{"id": 1, "region": "eu", "amount": 10, "at": "2026-12-03 10:00:00.125"}`,
		`{"id": 2, "region": "us", "amount": null, "at": null}`,
		`{"id": 3, "region": "eu", "amount": -5, "at": "2026-12-03 11:00:00"}`,
	})
	w.commit("id BIGINT NOT NULL, region STRING NOT NULL, amount INT, at TIMESTAMP(3), note STRING", []string{
		`{"id": 4, "region": "us", "amount": 7, "at": null, "note": "late"}`,
		`{"id": 5, "region": "ap", "amount": 1, "at": null, "note": null}`,
	})
	got := scanWithIceberg(t, w.metadataURI(), "id", "region", "amount", "note", "__offset")
	want := []string{
		"id=1 region=eu amount=10 note=(null) __offset=0",
		"id=2 region=us amount=(null) note=(null) __offset=2",
		"id=3 region=eu amount=-5 note=(null) __offset=1",
		"id=4 region=us amount=7 note=late __offset=3",
		"id=5 region=ap amount=1 note=(null) __offset=4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("iceberg-go read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
