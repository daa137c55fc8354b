package lakeengines

import (
	"context"
	"errors"
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
// does, with lake.RunRound: the rows of each partition value are the
// records of one bucket (a partition of its own), and each commit is a
// round over every bucket.
type lakeWriter struct {
	t       *testing.T
	tbl     *lake.Table
	meta    *lake.Metadata
	version int
	key     string
	partBy  string
	schemas map[int32]record.Schema
	current int32
	source  *memSource
	parts   map[string]uint64 // partition value to its physical id
	order   []string
	lakeAt  map[uint64]int64 // committed lake offsets
}

func newLakeWriter(t *testing.T, dir, partitionBy string) *lakeWriter {
	store, err := tiering.NewFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &lakeWriter{t: t, tbl: lake.NewTable(store, "wh/app/events"), partBy: partitionBy, schemas: map[int32]record.Schema{},
		source: &memSource{records: map[uint64][]lake.Record{}}, parts: map[string]uint64{}, lakeAt: map[uint64]int64{}}
}

// memSource serves each bucket's records from memory, all committed.
type memSource struct{ records map[uint64][]lake.Record }

func (s *memSource) ReadBucket(_ context.Context, b lake.BucketRef, from int64, maxRecords int, fn func(lake.Record) error) (int64, error) {
	next := from
	for _, r := range s.records[b.PhysicalID] {
		if r.Offset < from || int(r.Offset-from) >= maxRecords {
			continue
		}
		if err := fn(r); errors.Is(err, lake.ErrRoundFull) {
			return r.Offset + 1, nil
		} else if err != nil {
			return from, err
		}
		next = r.Offset + 1
	}
	return next, nil
}

// Commit is the controller's compare-and-set on the lake version.
func (w *lakeWriter) Commit(_ context.Context, expected int64, key string, offsets []lake.Offset) error {
	if expected != int64(w.version) {
		return fmt.Errorf("%w: version %d expected, committed is %d", lake.ErrFenced, expected, w.version)
	}
	w.version++
	w.key = key
	for _, o := range offsets {
		w.lakeAt[o.Bucket.PhysicalID] = o.Offset
	}
	return nil
}

// commit writes rows (JSON objects of schema) as one round; the schema
// may have columns added since the last commit.
func (w *lakeWriter) commit(schema string, rows []string) {
	t := w.t
	ctx := context.Background()
	s, err := record.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	if w.current == 0 || !w.schemas[w.current].Equal(s) {
		w.current++
		w.schemas[w.current] = s
	}
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
		id, ok := w.parts[key]
		if !ok {
			id = uint64(100 + len(w.parts))
			w.parts[key] = id
			w.order = append(w.order, key)
		}
		recs := w.source.records[id]
		off := int64(len(recs))
		w.source.records[id] = append(recs, lake.Record{Offset: off, TimestampMs: 1_700_000_000_000 + off, SchemaID: w.current, Row: row})
	}
	var buckets []lake.Offset
	for _, key := range w.order {
		ref := lake.BucketRef{PhysicalID: w.parts[key], Bucket: 0}
		if partCol >= 0 {
			ref.Partition = []lake.PartitionValue{{Type: "string", Value: key}}
		}
		buckets = append(buckets, lake.Offset{Bucket: ref, Offset: w.lakeAt[ref.PhysicalID]})
	}
	var by []string
	if w.partBy != "" {
		by = []string{w.partBy}
	}
	res, err := lake.RunRound(ctx, lake.Round{Table: w.tbl, Schemas: w.schemas, CurrentID: w.current, PartitionBy: by,
		TableUUID: "0b9a3f50-7a8e-4d0b-9a51-8a4b7c0d2e13", Version: int64(w.version), MetadataKey: w.key,
		Buckets: buckets, MaxRecords: 1 << 20, NowMs: 2000 + int64(w.version)}, w.source, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != int64(len(rows)) {
		t.Fatalf("a round committed %d records of %d", res.Records, len(rows))
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
	want := []string{ // each region's rows are one bucket's records
		"id=1 region=eu amount=10 note=(null) __offset=0",
		"id=2 region=us amount=(null) note=(null) __offset=0",
		"id=3 region=eu amount=-5 note=(null) __offset=1",
		"id=4 region=us amount=7 note=late __offset=1",
		"id=5 region=ap amount=1 note=(null) __offset=0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("iceberg-go read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
