package lake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// TestRunRoundCompacts: rounds of a few records each leave a bucket many
// small files; once eight are committed, a round merges them into one in
// the snapshot that adds its own file, folding their manifests: the
// bucket reads back the same records at the same offsets, from any
// offset, engines find fewer files and manifests, and a column added
// after some of the merged files were written reads as null in them.
func TestRunRoundCompacts(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	v2, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING, note STRING")
	src := &memSource{records: map[int32][]lake.Record{}, hw: map[int32]int64{}}
	tbl := lake.NewTable(store, "lake/app/small-9")
	com := &memCommitter{offsets: map[int32]int64{}}
	var prev *lake.Index
	var want []string
	round := func(schemaID int32) lake.RoundResult {
		t.Helper()
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: v1, 2: v2}, CurrentID: schemaID,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f63", Version: com.version, MetadataKey: com.key, Index: prev,
			Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 9, Bucket: 0}, Offset: com.offsets[0]}}, MaxRecords: 1000, NowMs: 1}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		prev = res.Index
		return res
	}
	schemaID := int32(1)
	for i := int64(0); i < 9; i++ {
		s, js := v1, `{"id": `+itoa(i)+`, "name": "r`+itoa(i)+`"}`
		if i >= 5 {
			schemaID, s, js = 2, v2, `{"id": `+itoa(i)+`, "name": "r`+itoa(i)+`", "note": "n`+itoa(i)+`"}`
		}
		rec := rowsOf(t, s, 2*i, js)[0]
		rec.SchemaID = schemaID
		src.records[0] = append(src.records[0], rec)
		src.hw[0] = 2*i + 2 // odd offsets hold no record: control batches (a round ends after its last record)
		res := round(schemaID)
		row := rec.Row
		if schemaID == 1 {
			row, _ = record.UpgradeRow(v1, v2, row, nil)
		}
		out, _ := record.AppendRowJSON(nil, v2, row)
		want = append(want, itoa(rec.Offset)+" "+itoa(rec.TimestampMs)+" "+string(out))
		if i < 8 && res.Compacted != 0 {
			t.Fatalf("round %d merged %d files with fewer than eight small ones committed", i, res.Compacted)
		}
		if i == 8 && (res.Compacted != 8 || res.Merged != 1) {
			t.Fatalf("the ninth round merged %d files into %d, want 8 into 1", res.Compacted, res.Merged)
		}
	}
	ix, err := tbl.ReadIndex(ctx, com.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := lake.BucketKey{PhysicalID: 9, Bucket: 0}
	files := ix.Files(b)
	if len(files) != 2 || files[0].From != 0 || files[0].Next != 15 || files[1].From != 15 || files[1].Next != 17 {
		t.Fatalf("files after the merge: %+v", files)
	}
	for _, from := range []int64{0, 5, 15} {
		got := readBack(t, tbl, ix, b, v2, 2, nil, from, 1<<20)
		if strings.Join(got, "\n") != strings.Join(want[(from+1)/2:], "\n") {
			t.Fatalf("from %d:\n got %s\nwant %s", from, strings.Join(got, "\n     "), strings.Join(want[(from+1)/2:], "\n     "))
		}
	}
	m, _, err := tbl.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list, err := tbl.ReadManifestList(ctx, m.CurrentSnapshot().ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Added != 2 || list[0].Deleted != 8 || list[0].Existing != 0 {
		t.Fatalf("manifests after the merge: %+v", list)
	}
	if n, err := tbl.Rows(ctx, m); err != nil || n != 9 {
		t.Fatalf("the table holds %d rows (%v), want 9", n, err)
	}
}

// TestRunRoundCutsDivergedBucket: when the metadata holds a bucket's lake
// offset below where the lake's files go (an unclean election's fence cut
// lowered it to where the log's new history parts from the old), the next
// round cuts the bucket's files back to it, keeping the rows below, and
// tiers the new history from there: the lake then reads the old history
// below the cut and the new one past it, once each. A cut with nothing
// new to read is committed too.
func TestRunRoundCutsDivergedBucket(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	row := func(i int64, history string) lake.Record {
		return rowsOf(t, s, i, `{"id": `+itoa(i)+`, "name": "`+history+itoa(i)+`"}`)[0]
	}
	src := &memSource{records: map[int32][]lake.Record{}, hw: map[int32]int64{}}
	tbl := lake.NewTable(store, "lake/app/cut-4")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func() lake.RoundResult {
		t.Helper()
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f64", Version: com.version, MetadataKey: com.key,
			Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 4, Bucket: 0}, Offset: com.offsets[0]}}, MaxRecords: 1000, NowMs: 1}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	read := func() []string {
		t.Helper()
		ix, err := tbl.ReadIndex(ctx, com.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, line := range readBack(t, tbl, ix, lake.BucketKey{PhysicalID: 4, Bucket: 0}, s, 1, nil, 0, 1<<20) {
			names = append(names, line[strings.LastIndex(line, `"name":"`)+8:len(line)-2])
		}
		return names
	}
	for i := range int64(10) {
		src.records[0] = append(src.records[0], row(i, "old"))
		if i == 4 || i == 9 {
			src.hw[0] = i + 1
			round()
		}
	}
	// The fence cut: the log's new history parts from the lake's at 7,
	// and has nothing past it yet.
	com.offsets[0] = 7
	src.records[0], src.hw[0] = src.records[0][:7], 7
	res := round()
	if len(res.Cut) != 1 || res.Cut[0].Offset != 7 || res.Version != 3 {
		t.Fatalf("the round after the cut: %+v", res)
	}
	if got, want := strings.Join(read(), ","), "old0,old1,old2,old3,old4,old5,old6"; got != want {
		t.Fatalf("after the cut: %s, want %s", got, want)
	}
	// The new history goes on from the cut.
	for i := int64(7); i < 12; i++ {
		src.records[0] = append(src.records[0], row(i, "new"))
	}
	src.hw[0] = 12
	if res := round(); len(res.Cut) != 0 {
		t.Fatalf("a second cut: %+v", res)
	}
	if got, want := strings.Join(read(), ","), "old0,old1,old2,old3,old4,old5,old6,new7,new8,new9,new10,new11"; got != want {
		t.Fatalf("after the new history: %s, want %s", got, want)
	}
}
