package lake_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// change is a changelog record of testPK's schema.
func change(t *testing.T, s record.Schema, offset int64, c record.ChangeType, js string) lake.Record {
	t.Helper()
	return lake.Record{Offset: offset, TimestampMs: 1_700_000_000_000 + offset, SchemaID: 1, Row: mustRow(t, s, js), Change: c}
}

// TestRunRoundPrimaryKey: a primary-key table's lake holds each bucket's
// latest row per key as of its lake offset, in one data file per bucket
// that every round touching the bucket writes again (copy-on-write):
// updates replace rows, deletes drop them, a key deleted and inserted
// again comes back, the buckets a round does not touch keep their files,
// and a bucket whose every key is deleted has no file left.
func TestRunRoundPrimaryKey(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	s.PrimaryKey = []string{"id"}
	src := &memSource{records: map[int32][]lake.Record{
		0: {
			change(t, s, 0, record.Insert, `{"id": 1, "name": "a"}`),
			change(t, s, 1, record.Insert, `{"id": 2, "name": "b"}`),
			change(t, s, 2, record.Insert, `{"id": 3, "name": "c"}`),
			change(t, s, 3, record.UpdateBefore, `{"id": 1, "name": "a"}`),
			change(t, s, 4, record.UpdateAfter, `{"id": 1, "name": "a2"}`),
			change(t, s, 5, record.Delete, `{"id": 2, "name": "b"}`),
		},
		1: {change(t, s, 0, record.Insert, `{"id": 10, "name": "x"}`)},
	}, hw: map[int32]int64{0: 6, 1: 1}}
	tbl := lake.NewTable(store, "lake/app/users-5")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func() lake.RoundResult {
		t.Helper()
		var buckets []lake.Offset
		for b := range int32(2) {
			buckets = append(buckets, lake.Offset{Bucket: lake.BucketRef{PhysicalID: 5, Bucket: b}, Offset: com.offsets[b]})
		}
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f62", Version: com.version, MetadataKey: com.key,
			Buckets: buckets, MaxRecords: 1000, NowMs: 1000 + com.version}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// rows reads a bucket back through the index, as Floe's scan does.
	rows := func(b int32) string {
		t.Helper()
		ix, err := tbl.ReadIndex(ctx, com.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ix.Files(lake.BucketKey{PhysicalID: 5, Bucket: b})); n > 1 {
			t.Fatalf("bucket %d has %d data files", b, n)
		}
		return strings.Join(readBack(t, tbl, ix, lake.BucketKey{PhysicalID: 5, Bucket: b}, s, 1, nil, 0, 1<<20), "\n")
	}
	ts := func(off int64) string { return itoa(off) + " " + itoa(1_700_000_000_000+off) + " " }

	if res := round(); res.Files != 2 || res.Version != 1 {
		t.Fatalf("first round: %+v", res)
	}
	if got, want := rows(0), ts(2)+`{"id":3,"name":"c"}`+"\n"+ts(4)+`{"id":1,"name":"a2"}`; got != want {
		t.Fatalf("bucket 0 after the first round:\n%s\nwant\n%s", got, want)
	}

	// The second round changes bucket 0 only: an insert, an update, the
	// deleted key back, a delete.
	src.records[0] = append(src.records[0],
		change(t, s, 6, record.Insert, `{"id": 4, "name": "d"}`),
		change(t, s, 7, record.UpdateBefore, `{"id": 3, "name": "c"}`),
		change(t, s, 8, record.UpdateAfter, `{"id": 3, "name": "c2"}`),
		change(t, s, 9, record.Insert, `{"id": 2, "name": "b2"}`),
		change(t, s, 10, record.Delete, `{"id": 1, "name": "a2"}`),
	)
	src.hw[0] = 11
	if res := round(); res.Files != 1 || res.Version != 2 || len(res.Offsets) != 1 {
		t.Fatalf("second round: %+v", res)
	}
	if got, want := rows(0), ts(6)+`{"id":4,"name":"d"}`+"\n"+ts(8)+`{"id":3,"name":"c2"}`+"\n"+ts(9)+`{"id":2,"name":"b2"}`; got != want {
		t.Fatalf("bucket 0 after the second round:\n%s\nwant\n%s", got, want)
	}
	if got, want := rows(1), ts(0)+`{"id":10,"name":"x"}`; got != want {
		t.Fatalf("bucket 1, untouched:\n%s\nwant\n%s", got, want)
	}
	m, _, err := tbl.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum := m.CurrentSnapshot().Summary; sum["operation"] != "overwrite" || sum["deleted-data-files"] != "1" || sum["added-data-files"] != "1" {
		t.Fatalf("second snapshot's summary %v", sum)
	}
	if n, err := tbl.Rows(ctx, m); err != nil || n != 4 {
		t.Fatalf("the table holds %d rows (%v), want 4", n, err)
	}

	// Every key of bucket 1 deleted: its file goes, none replaces it.
	src.records[1] = append(src.records[1], change(t, s, 1, record.Delete, `{"id": 10, "name": "x"}`))
	src.hw[1] = 2
	if res := round(); res.Files != 0 || res.Version != 3 {
		t.Fatalf("third round: %+v", res)
	}
	if got := rows(1); got != "" {
		t.Fatalf("bucket 1 after its last key was deleted: %s", got)
	}
	m, _, _ = tbl.ReadCurrent(ctx)
	if n, err := tbl.Rows(ctx, m); err != nil || n != 3 {
		t.Fatalf("the table holds %d rows (%v), want 3", n, err)
	}
}

// scanSource is a memSource whose buckets' stores can be scanned: pages
// of rows, each page as the store held it at its applied offset.
type scanSource struct {
	*memSource
	schema  record.Schema
	pages   [][]string // JSON rows
	applied []int64    // each page's applied offset
}

func (s *scanSource) ScanBucket(_ context.Context, _ lake.BucketRef, fn func(int32, []byte) error) (int64, int64, error) {
	for _, page := range s.pages {
		for _, js := range page {
			row, err := record.AppendRowFromJSON(nil, s.schema, []byte(js))
			if err != nil {
				return 0, 0, err
			}
			if err := fn(1, row); err != nil {
				return 0, 0, err
			}
		}
	}
	return s.applied[0], s.applied[len(s.applied)-1], nil
}

// TestRunRoundRebuildsDivergedPrimaryKeyBucket: after an unclean
// election's fence cut lowered a primary-key bucket's lake offset below
// what its lake holds, a round writes the bucket again from its leader's
// store, scanned page by page while it was written (each page its own
// view), and the changelog from the first page's view on: the lake then
// holds the new history's latest row per key, none of the old history's
// rows past the cut, untouched keys at distinct offsets just below the
// scan's first view. A store whose view is still below the cut, or a
// source that cannot scan, leaves the bucket waiting; later rounds go on
// by copy-on-write.
func TestRunRoundRebuildsDivergedPrimaryKeyBucket(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	s.PrimaryKey = []string{"id"}
	mem := &memSource{records: map[int32][]lake.Record{0: {
		change(t, s, 0, record.Insert, `{"id": 1, "name": "a"}`),
		change(t, s, 1, record.Insert, `{"id": 2, "name": "b"}`),
		change(t, s, 2, record.Insert, `{"id": 3, "name": "c"}`),
		// The old history, which the cut at 3 leaves behind.
		change(t, s, 3, record.UpdateBefore, `{"id": 1, "name": "a"}`),
		change(t, s, 4, record.UpdateAfter, `{"id": 1, "name": "old"}`),
		change(t, s, 5, record.Insert, `{"id": 4, "name": "old"}`),
	}}, hw: map[int32]int64{0: 6}}
	tbl := lake.NewTable(store, "lake/app/users-7")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func(src lake.Source) lake.RoundResult {
		t.Helper()
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f67", Version: com.version, MetadataKey: com.key,
			Buckets:    []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 7, Bucket: 0}, Offset: com.offsets[0]}},
			MaxRecords: 1000, NowMs: 42}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rows := func() string {
		t.Helper()
		ix, err := tbl.ReadIndex(ctx, com.key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ix.Files(lake.BucketKey{PhysicalID: 7, Bucket: 0})); n > 1 {
			t.Fatalf("the bucket has %d data files", n)
		}
		return strings.Join(readBack(t, tbl, ix, lake.BucketKey{PhysicalID: 7, Bucket: 0}, s, 1, nil, 0, 1<<20), "\n")
	}
	if res := round(mem); res.Version != 1 || com.offsets[0] != 6 {
		t.Fatalf("first round: %+v", res)
	}

	// The unclean election: the new history parts from the old at 3.
	com.offsets[0] = 3
	mem.records[0] = append(mem.records[0][:3],
		change(t, s, 3, record.Insert, `{"id": 5, "name": "e"}`),
		change(t, s, 4, record.Delete, `{"id": 2, "name": "b"}`),
		change(t, s, 5, record.UpdateBefore, `{"id": 3, "name": "c"}`),
		change(t, s, 6, record.UpdateAfter, `{"id": 3, "name": "c2"}`),
	)
	mem.hw[0] = 7
	// A source that cannot scan a store: the bucket waits.
	if res := round(mem); len(res.Stuck) != 1 || res.Version != 1 {
		t.Fatalf("a round without a store to scan: %+v", res)
	}
	// A store whose view is still below the cut: the bucket waits.
	behind := &scanSource{memSource: mem, schema: s, pages: [][]string{{`{"id": 1, "name": "a"}`}}, applied: []int64{2, 2}}
	if res := round(behind); len(res.Stuck) != 1 || res.Version != 1 {
		t.Fatalf("a round over a store behind the cut: %+v", res)
	}
	// The store scanned in two pages: the first at 5 (before key 3's
	// update at 5 and 6), the second at 7.
	src := &scanSource{memSource: mem, schema: s, applied: []int64{5, 7}, pages: [][]string{
		{`{"id": 1, "name": "a"}`, `{"id": 3, "name": "c"}`},
		{`{"id": 5, "name": "e"}`},
	}}
	res := round(src)
	if len(res.Rebuilt) != 1 || res.Rebuilt[0].Offset != 7 || len(res.Stuck) != 0 || res.Version != 2 || com.offsets[0] != 7 {
		t.Fatalf("the rebuilding round: %+v, offset %d", res, com.offsets[0])
	}
	// Keys 1 and 5, untouched since 5, just below it in key order, at the
	// round's time; key 3 at its change.
	want := "3 42 " + `{"id":1,"name":"a"}` + "\n" + "4 42 " + `{"id":5,"name":"e"}` + "\n" +
		"6 1700000000006 " + `{"id":3,"name":"c2"}`
	if got := rows(); got != want {
		t.Fatalf("the rebuilt bucket:\n%s\nwant\n%s", got, want)
	}
	// The staging file is gone: the data folder holds the bucket's file.
	var data []string
	if err := store.List(ctx, "lake/app/users-7/data/", func(oi tiering.ObjectInfo) error {
		data = append(data, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range data {
		if strings.Contains(k, "staging-") {
			t.Fatalf("a staging file left: %s", k)
		}
	}

	// Copy-on-write goes on from there.
	mem.records[0] = append(mem.records[0],
		change(t, s, 7, record.UpdateBefore, `{"id": 1, "name": "a"}`),
		change(t, s, 8, record.UpdateAfter, `{"id": 1, "name": "a3"}`),
	)
	mem.hw[0] = 9
	if res := round(src); len(res.Rebuilt) != 0 || res.Version != 3 {
		t.Fatalf("the round after: %+v", res)
	}
	want = "4 42 " + `{"id":5,"name":"e"}` + "\n" + "6 1700000000006 " + `{"id":3,"name":"c2"}` + "\n" +
		"8 1700000000008 " + `{"id":1,"name":"a3"}`
	if got := rows(); got != want {
		t.Fatalf("after the next round:\n%s\nwant\n%s", got, want)
	}
}
