package lake_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// readBack scans bucket b of the index from offset from on, with the
// columns of schema (version id) at the given table positions (nil:
// every one), writes them as log batches as a leader serving a fetch
// would, and decodes those: each record's offset, timestamp and row as
// JSON.
func readBack(t *testing.T, tbl *lake.Table, ix *lake.Index, b lake.BucketKey, schema record.Schema, id int16, cols []int, from int64, maxBytes int) []string {
	t.Helper()
	ctx := context.Background()
	out := schema
	projected := cols != nil
	if projected {
		out = arrowlog.SubSchema(schema, cols)
	} else {
		for i := range schema.Columns {
			cols = append(cols, i)
		}
	}
	fields := make([]int, len(cols))
	for i, c := range cols {
		if c < len(ix.Schema.Fields) && ix.Schema.Fields[c].Name == schema.Columns[c].Name {
			fields[i] = ix.Schema.Fields[c].ID
		}
	}
	w, err := lake.NewBatchWriter(out, id, projected)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := arrowlog.NewDecoder(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		span, err := ix.Find(b, from)
		if errors.Is(err, lake.ErrNotInLake) {
			return got
		} else if err != nil {
			t.Fatal(err)
		}
		scan, err := tbl.OpenScan(ctx, span, ix.Schema, w.ScanColumns(fields), from, 3)
		if err != nil {
			t.Fatal(err)
		}
		for {
			c, err := scan.Next(ctx, 2)
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			for taken := 0; taken < c.Rows(); {
				data, n, err := w.Append(nil, c, taken, maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				taken += n
				for it := record.NewBatchIterator(data, true); it.Next(); {
					batch := it.Batch()
					if batch.SchemaID() != id || batch.Projected() != projected || !batch.AppendOnly() {
						t.Fatalf("batch header: schema %d projected %v", batch.SchemaID(), batch.Projected())
					}
					err := dec.Rows(batch.Payload(), int(batch.RecordCount()), func(i int, row []byte) error {
						js, err := record.AppendRowJSON(nil, out, row)
						got = append(got, strings.Join([]string{itoa(batch.BaseOffset() + int64(i)), itoa(batch.CommitTimestamp()), string(js)}, " "))
						return err
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			c.Release()
		}
		from = span.Next
		scan.Close()
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestScanReadsBackTheLog: what rounds wrote reads back, through a scan
// and the log batches a leader serves from it, as the log's records:
// every type the lake casts (TINYINT, SMALLINT, TIME, TIMESTAMP(9),
// nested ones), each record at its offset with its timestamp, a gap in
// the offsets (a control batch) kept, rows written before a column was
// added reading it as null, a projection, and reads that start in the
// middle of a file or a gap.
func TestScanReadsBackTheLog(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const cols1 = "id BIGINT NOT NULL, t TINYINT, s SMALLINT, tm TIME, ts TIMESTAMP(9), ltz TIMESTAMP_LTZ(3), " +
		"d DECIMAL(10, 2), tags ARRAY<STRING>, m MAP<STRING, INT>, r ROW<a SMALLINT, b STRING>"
	v1, err := record.ParseSchema(cols1)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := record.ParseSchema(cols1 + ", note STRING")
	rows1 := []string{
		`{"id": 1, "t": -128, "s": 32767, "tm": "23:59:59.999", "ts": "2026-12-03 10:00:00.123456789", "ltz": "2026-12-03T10:00:00.5Z", "d": "12.34", "tags": ["a", "b"], "m": {"k": 1}, "r": {"a": -3, "b": "x"}}`,
		`{"id": 2}`,
		`{"id": 3, "t": 5, "tags": [], "m": {}, "r": {"a": null, "b": null}}`,
		`{"id": 4, "ts": "1969-12-31 23:59:59.999999999"}`,
		`{"id": 5, "tm": "00:00:00.001"}`,
	}
	recs := rowsOf(t, v1, 0, rows1...)
	for i := range recs {
		recs[i].TimestampMs = 1_700_000_000_000 + int64(i/2) // two records a batch
	}
	later := rowsOf(t, v2, 6, `{"id": 6, "note": "n"}`, `{"id": 7}`, `{"id": 8, "t": 1, "note": "m"}`)
	for i := range later {
		later[i].SchemaID, later[i].TimestampMs = 2, 1_700_000_000_100
	}
	src := &memSource{records: map[int32][]lake.Record{0: recs}, hw: map[int32]int64{0: 5}}
	tbl := lake.NewTable(store, "lake/app/kinds-3")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func(schemaID int32) {
		t.Helper()
		_, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: v1, 2: v2}, CurrentID: schemaID,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f61", Version: com.version, MetadataKey: com.key,
			Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 3, Bucket: 0}, Offset: com.offsets[0]}}, MaxRecords: 1000, NowMs: 1}, src, com)
		if err != nil {
			t.Fatal(err)
		}
	}
	round(1)
	// Offset 5 is a control batch: the next round reads 6 to 8.
	src.records[0], src.hw[0] = append(src.records[0], later...), 9
	round(2)
	ix, err := tbl.ReadIndex(ctx, com.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := lake.BucketKey{PhysicalID: 3, Bucket: 0}
	if files := ix.Files(b); len(files) != 2 || files[0].From != 0 || files[0].Next != 5 || files[1].From != 5 || files[1].Next != 9 {
		t.Fatalf("files %+v", files)
	}
	if end, _ := ix.End(b); end != 9 {
		t.Fatalf("end %d", end)
	}
	// The expected records: the log's rows upgraded to v2, as JSON.
	var want []string
	for _, r := range append(append([]lake.Record(nil), recs...), later...) {
		row := r.Row
		if r.SchemaID == 1 {
			row, _ = record.UpgradeRow(v1, v2, row, nil)
		}
		js, _ := record.AppendRowJSON(nil, v2, row)
		// The lake holds microseconds: TIMESTAMP(9) reads back without
		// its nanoseconds (docs/lake.md).
		j := strings.NewReplacer("123456789", "123456000", "999999999", "999999000").Replace(string(js))
		want = append(want, itoa(r.Offset)+" "+itoa(r.TimestampMs)+" "+j)
	}
	check := func(name string, got, want []string) {
		t.Helper()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s:\n got %s\nwant %s", name, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
		}
	}
	check("all", readBack(t, tbl, ix, b, v2, 2, nil, 0, 1<<20), want)
	check("one batch a fetch", readBack(t, tbl, ix, b, v2, 2, nil, 0, 1), want)
	check("from the middle", readBack(t, tbl, ix, b, v2, 2, nil, 3, 1<<20), want[3:])
	check("from the gap", readBack(t, tbl, ix, b, v2, 2, nil, 5, 1<<20), want[5:])

	// A projection reads its columns alone: note (null before it was
	// added) and t.
	var proj []string
	for _, r := range append(append([]lake.Record(nil), recs...), later...) {
		row := r.Row
		if r.SchemaID == 1 {
			row, _ = record.UpgradeRow(v1, v2, row, nil)
		}
		p, err := record.ProjectRow(v2, row, []int{10, 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := record.AppendRowJSON(nil, arrowlog.SubSchema(v2, []int{10, 1}), p)
		proj = append(proj, itoa(r.Offset)+" "+itoa(r.TimestampMs)+" "+string(js))
	}
	check("projected", readBack(t, tbl, ix, b, v2, 2, []int{10, 1}, 0, 1<<20), proj)

	if _, err := ix.Find(b, 9); !errors.Is(err, lake.ErrNotInLake) {
		t.Fatalf("offset 9 of a lake ending at 9: %v", err)
	}
	if _, err := ix.Find(lake.BucketKey{PhysicalID: 3, Bucket: 1}, 0); !errors.Is(err, lake.ErrNotInLake) {
		t.Fatalf("a bucket the lake lacks: %v", err)
	}
}
