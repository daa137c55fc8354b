package lake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// memSource serves records from memory, by bucket, as a log would: up to
// a committed end (hw).
type memSource struct {
	records map[int32][]lake.Record
	hw      map[int32]int64
}

func (s *memSource) ReadBucket(_ context.Context, b lake.BucketRef, from int64, maxRecords int, fn func(lake.Record) error) (int64, error) {
	next, n := from, 0
	for _, r := range s.records[b.Bucket] {
		if r.Offset < from || r.Offset >= s.hw[b.Bucket] || n == maxRecords {
			continue
		}
		if err := fn(r); errors.Is(err, lake.ErrRoundFull) {
			return r.Offset + 1, nil
		} else if err != nil {
			return from, err
		}
		next, n = r.Offset+1, n+1
	}
	return next, nil
}

// memCommitter is the controller's compare-and-set on the lake version.
type memCommitter struct {
	mu      sync.Mutex
	version int64
	key     string
	offsets map[int32]int64
}

func (c *memCommitter) Commit(_ context.Context, expected int64, key string, offsets []lake.Offset) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if expected != c.version {
		return fmt.Errorf("%w: version %d expected, committed is %d", lake.ErrFenced, expected, c.version)
	}
	c.version++
	c.key = key
	for _, o := range offsets {
		if o.Offset < c.offsets[o.Bucket.Bucket] {
			return fmt.Errorf("offset of bucket %d went back", o.Bucket.Bucket)
		}
		c.offsets[o.Bucket.Bucket] = o.Offset
	}
	return nil
}

func rowsOf(t *testing.T, s record.Schema, first int64, jsons ...string) []lake.Record {
	t.Helper()
	var out []lake.Record
	for i, js := range jsons {
		row, err := record.AppendRowFromJSON(nil, s, []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lake.Record{Offset: first + int64(i), TimestampMs: 1_700_000_000_000 + first + int64(i), SchemaID: 1, Row: row})
	}
	return out
}

// TestRunRound: rounds read each bucket from its lake offset to its high
// watermark, commit what they read through the controller's compare-and-
// set and publish it; a round built on a version another commit replaced
// is fenced and changes nothing; rows of an older schema version land
// with the columns added since null; the snapshot's summary holds every
// bucket's offset.
func TestRunRound(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	v2, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING, note STRING")
	src := &memSource{records: map[int32][]lake.Record{
		0: rowsOf(t, v1, 0, `{"id": 1, "name": "a"}`, `{"id": 2, "name": "b"}`, `{"id": 3, "name": "c"}`),
		1: rowsOf(t, v1, 0, `{"id": 10, "name": "x"}`),
	}, hw: map[int32]int64{0: 2, 1: 1}}
	tbl := lake.NewTable(store, "lake/app/events-7")
	com := &memCommitter{offsets: map[int32]int64{}}
	stale := int64(-1) // >= 0: the version the next round believes committed
	round := func(schemaID int32) (lake.RoundResult, error) {
		version := com.version
		if stale >= 0 {
			version, stale = stale, -1
		}
		var buckets []lake.Offset
		for b := range int32(2) {
			buckets = append(buckets, lake.Offset{Bucket: lake.BucketRef{PhysicalID: 7, Bucket: b}, Offset: com.offsets[b]})
		}
		return lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: v1, 2: v2}, CurrentID: schemaID,
			TableUUID: "9d1f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Version: version, MetadataKey: com.key,
			Buckets: buckets, MaxRecords: 1000, NowMs: 5000 + com.version}, src, com)
	}
	res, err := round(1)
	if err != nil || res.Version != 1 || res.Records != 3 || res.Files != 2 {
		t.Fatalf("first round: %+v, %v", res, err)
	}
	// Nothing new: nothing committed.
	if res, err := round(1); err != nil || res.Version != 1 || res.Files != 0 {
		t.Fatalf("idle round: %+v, %v", res, err)
	}
	// Another commit came first: fenced, nothing published.
	src.hw[0] = 3
	com.version++
	stale = 1
	_, err = round(1)
	com.version--
	if err == nil || !errorsIs(err, lake.ErrFenced) {
		t.Fatalf("round on a replaced version: %v", err)
	}
	if _, err := tbl.ReadVersion(ctx, 2); !errors.Is(err, tiering.ErrNotFound) {
		t.Fatalf("a fenced round published version 2: %v", err)
	}
	// ALTER TABLE added a column; the rest of bucket 0 is of the old version.
	src.records[1] = append(src.records[1], lake.Record{Offset: 1, TimestampMs: 1, SchemaID: 2, Row: mustRow(t, v2, `{"id": 11, "name": "y", "note": "new"}`)})
	src.hw[1] = 2
	if res, err = round(2); err != nil || res.Version != 2 || res.Records != 2 {
		t.Fatalf("round after ALTER: %+v, %v", res, err)
	}
	meta, err := tbl.ReadVersion(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	offsets, err := lake.ParseLogOffsets(meta.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
	if err != nil || offsets["7/0"] != 3 || offsets["7/1"] != 2 || len(offsets) != 2 {
		t.Fatalf("log offsets %v, %v", offsets, err)
	}
	if len(meta.Schemas) != 2 || meta.CurrentSchema().Fields[2].Name != "note" {
		t.Fatalf("schemas %+v", meta.Schemas)
	}
	manifests, err := tbl.ReadManifestList(ctx, meta.CurrentSnapshot().ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, m := range manifests {
		rows += m.AddedRows + m.ExistingRows
	}
	if rows != 5 || len(manifests) != 2 {
		t.Fatalf("%d manifests of %d rows, want 2 of 5", len(manifests), rows)
	}
}

func mustRow(t *testing.T, s record.Schema, js string) []byte {
	t.Helper()
	row, err := record.AppendRowFromJSON(nil, s, []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return row
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestRunRoundBoundsItsBytes: a round stops reading once its files reach
// MaxBytes and commits what it has; the next goes on from there, and the
// lake ends with every record once.
func TestRunRoundBoundsItsBytes(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, pad STRING")
	var rows []string
	for i := range 3000 {
		rows = append(rows, fmt.Sprintf(`{"id": %d, "pad": "%d-%0200d"}`, i, i*7919, i))
	}
	src := &memSource{records: map[int32][]lake.Record{0: rowsOf(t, s, 0, rows...)}, hw: map[int32]int64{0: 3000}}
	tbl := lake.NewTable(store, "lake/app/big-1")
	com := &memCommitter{offsets: map[int32]int64{}}
	rounds := 0
	for com.offsets[0] < 3000 {
		if rounds++; rounds > 100 {
			t.Fatalf("100 rounds and the lake holds %d of 3000 records", com.offsets[0])
		}
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "1d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Version: com.version, MetadataKey: com.key,
			Buckets:    []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 1, Bucket: 0}, Offset: com.offsets[0]}},
			MaxRecords: 1 << 20, MaxBytes: 64 << 10, NowMs: 1}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		if res.Records == 0 {
			t.Fatalf("round %d read nothing at offset %d", rounds, com.offsets[0])
		}
		if res.Full != (com.offsets[0] < 3000) {
			t.Fatalf("round %d ended at %d of 3000 with Full %v", rounds, com.offsets[0], res.Full)
		}
	}
	if rounds < 3 {
		t.Fatalf("3000 rows of 200 bytes in %d rounds of 64 KiB", rounds)
	}
	m, _, err := tbl.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tbl.Rows(ctx, m); err != nil || n != 3000 {
		t.Fatalf("the lake holds %d rows, %v; want 3000", n, err)
	}
}

// raceSource serves bucket 1's records, but first lets another task's
// round commit (its hook): the round reading it then loses the race.
type raceSource struct {
	*memSource
	hook func()
}

func (s *raceSource) ReadBucket(ctx context.Context, b lake.BucketRef, from int64, maxRecords int, fn func(lake.Record) error) (int64, error) {
	if s.hook != nil {
		s.hook()
		s.hook = nil
	}
	return s.memSource.ReadBucket(ctx, b, from, maxRecords, fn)
}

// TestRunRoundRebases: a round whose commit loses the race to another
// task's commits its files on top of the new version (Reload) instead of
// dropping them; the lake ends with both tasks' rows and offsets.
func TestRunRoundRebases(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	mem := &memSource{records: map[int32][]lake.Record{
		0: rowsOf(t, s, 0, `{"id": 1, "name": "a"}`, `{"id": 2, "name": "b"}`),
		1: rowsOf(t, s, 0, `{"id": 3, "name": "c"}`),
	}, hw: map[int32]int64{0: 2, 1: 1}}
	tbl := lake.NewTable(store, "lake/app/race-3")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func(bucket int32, src lake.Source, reload bool) (lake.RoundResult, error) {
		r := lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "3d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Version: com.version, MetadataKey: com.key,
			Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 3, Bucket: bucket}, Offset: com.offsets[bucket]}}, MaxRecords: 100, NowMs: 1}
		if reload {
			r.Reload = func(context.Context) (int64, string, error) { return com.version, com.key, nil }
		}
		return lake.RunRound(ctx, r, src, com)
	}
	// Without Reload the loser drops its files.
	race := &raceSource{memSource: mem, hook: func() {
		if _, err := round(0, mem, false); err != nil {
			t.Fatal(err)
		}
	}}
	if _, err := round(1, race, false); !errors.Is(err, lake.ErrFenced) {
		t.Fatalf("the losing round without Reload: %v", err)
	}
	// With Reload it commits on top of the winner's version.
	mem.hw[0] = 2
	mem.records[0] = append(mem.records[0], rowsOf(t, s, 2, `{"id": 4, "name": "d"}`)...)
	mem.hw[0] = 3
	race = &raceSource{memSource: mem, hook: func() {
		if _, err := round(0, mem, false); err != nil {
			t.Fatal(err)
		}
	}}
	res, err := round(1, race, true)
	if err != nil || res.Version != 3 || res.Records != 1 {
		t.Fatalf("the rebased round: %+v, %v", res, err)
	}
	m, v, err := tbl.ReadCurrent(ctx)
	if err != nil || v != 3 {
		t.Fatalf("current version %d, %v", v, err)
	}
	offsets, _ := lake.ParseLogOffsets(m.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
	if n, _ := tbl.Rows(ctx, m); n != 4 || offsets["3/0"] != 3 || offsets["3/1"] != 1 {
		t.Fatalf("the lake holds %d rows, offsets %v; want 4 rows, 3/0=3 and 3/1=1", n, offsets)
	}
}

// batchSource serves a bucket's records as whole Arrow batches of their
// schema version, as a log of arrow batches holds them.
type batchSource struct {
	batches []lake.Record // Offset: the batch's base
}

func (s *batchSource) ReadBucket(_ context.Context, _ lake.BucketRef, from int64, _ int, fn func(lake.Record) error) (int64, error) {
	next := from
	for _, r := range s.batches {
		if r.Offset < from {
			continue
		}
		if err := fn(r); err != nil && !errors.Is(err, lake.ErrRoundFull) {
			return from, err
		}
		next = r.Offset + r.Batch.NumRows()
	}
	return next, nil
}

// TestRunRoundWritesArrowBatches: whole Arrow batches go to Parquet as
// they are, a batch of an older schema version with the columns added
// since null, TINYINT widened; offsets run on from each batch's base.
func TestRunRoundWritesArrowBatches(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := record.ParseSchema("id BIGINT NOT NULL, small TINYINT")
	v2, _ := record.ParseSchema("id BIGINT NOT NULL, small TINYINT, note STRING")
	batch := func(s record.Schema, jsons ...string) arrow.RecordBatch {
		enc, err := arrowlog.NewEncoder(s, arrowlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, js := range jsons {
			if err := enc.Append(mustRow(t, s, js)); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := enc.Record()
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	b1 := batch(v1, `{"id": 1, "small": -3}`, `{"id": 2, "small": null}`)
	b2 := batch(v2, `{"id": 3, "small": 7, "note": "x"}`)
	defer b1.Release()
	defer b2.Release()
	src := &batchSource{batches: []lake.Record{{Offset: 0, TimestampMs: 10, SchemaID: 1, Batch: b1}, {Offset: 2, TimestampMs: 20, SchemaID: 2, Batch: b2}}}
	tbl := lake.NewTable(store, "lake/app/arrow-4")
	com := &memCommitter{offsets: map[int32]int64{}}
	res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: v1, 2: v2}, CurrentID: 2,
		TableUUID: "4d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 4, Bucket: 0}}},
		MaxRecords: 100, NowMs: 1}, src, com)
	if err != nil || res.Records != 3 || com.offsets[0] != 3 {
		t.Fatalf("round %+v, %v; lake offset %d", res, err, com.offsets[0])
	}
	var got []string
	err = store.List(ctx, "lake/app/arrow-4/data/", func(oi tiering.ObjectInfo) error {
		rc, err := store.Get(ctx, oi.Key, 0, -1)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		pf, err := file.NewParquetReader(bytes.NewReader(body))
		if err != nil {
			return err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		tb, err := fr.ReadTable(ctx)
		if err != nil {
			return err
		}
		defer tb.Release()
		for i := range int(tb.NumRows()) {
			var parts []string
			for c := range int(tb.NumCols()) {
				if name := tb.Schema().Field(c).Name; name != "__timestamp" && name != "__bucket" {
					parts = append(parts, name+"="+tb.Column(c).Data().Chunk(0).ValueStr(i))
				}
			}
			got = append(got, strings.Join(parts, " "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "id=1 small=-3 note=(null) __offset=0|id=2 small=(null) note=(null) __offset=1|id=3 small=7 note=x __offset=2"
	if strings.Join(got, "|") != want {
		t.Fatalf("the lake's rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
}

// TestRunRoundExpiresSnapshots: each commit drops the snapshots older
// than the retention, never the current one, and deletes their manifest
// lists; the rows stay.
func TestRunRoundExpiresSnapshots(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	src := &memSource{records: map[int32][]lake.Record{}, hw: map[int32]int64{}}
	tbl := lake.NewTable(store, "lake/app/expire-5")
	com := &memCommitter{offsets: map[int32]int64{}}
	var lists []string
	for i := range 5 {
		src.records[0] = append(src.records[0], rowsOf(t, s, int64(i), fmt.Sprintf(`{"id": %d, "name": "n"}`, i))...)
		src.hw[0] = int64(i + 1)
		res, err := lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "5d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Version: com.version, MetadataKey: com.key,
			Buckets:    []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 5, Bucket: 0}, Offset: com.offsets[0]}},
			MaxRecords: 100, NowMs: int64(i) * 60_000, Retention: 90 * time.Second}, src, com)
		if err != nil {
			t.Fatal(err)
		}
		if want := max(0, min(1, i-1)); res.Expired != want {
			t.Fatalf("commit %d expired %d snapshots, want %d", i, res.Expired, want)
		}
		m, _, err := tbl.ReadCurrent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		lists = append(lists, m.CurrentSnapshot().ManifestList)
		if n, err := tbl.Rows(ctx, m); err != nil || n != int64(i+1) {
			t.Fatalf("after commit %d the lake holds %d rows, %v", i, n, err)
		}
	}
	m, _, _ := tbl.ReadCurrent(ctx)
	if len(m.Snapshots) != 2 || len(m.SnapshotLog) != 2 || m.Snapshots[0].ParentID != nil {
		t.Fatalf("snapshots after expiry: %+v", m.Snapshots)
	}
	for i, uri := range lists {
		_, err := store.Stat(ctx, strings.TrimPrefix(uri, strings.TrimSuffix(store.String(), "/")+"/"))
		if gone := errors.Is(err, tiering.ErrNotFound); gone != (i < 3) {
			t.Fatalf("the manifest list of snapshot %d: %v (want it gone: %v)", i, err, i < 3)
		}
	}
}

// TestCollectGarbage: the files of a round whose commit was refused, and
// the staged metadata of versions published since, go; what the committed
// version references, and the published versions, stay and read back.
func TestCollectGarbage(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := record.ParseSchema("id BIGINT NOT NULL, name STRING")
	src := &memSource{records: map[int32][]lake.Record{0: rowsOf(t, s, 0, `{"id": 1, "name": "a"}`)}, hw: map[int32]int64{0: 1}}
	tbl := lake.NewTable(store, "lake/app/gc-6")
	com := &memCommitter{offsets: map[int32]int64{}}
	round := func(version int64) (lake.RoundResult, error) {
		return lake.RunRound(ctx, lake.Round{Table: tbl, Schemas: map[int32]record.Schema{1: s}, CurrentID: 1,
			TableUUID: "6d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", Version: version, MetadataKey: com.key,
			Buckets: []lake.Offset{{Bucket: lake.BucketRef{PhysicalID: 6, Bucket: 0}, Offset: com.offsets[0]}}, MaxRecords: 100, NowMs: 1}, src, com)
	}
	if _, err := round(0); err != nil {
		t.Fatal(err)
	}
	src.records[0] = append(src.records[0], rowsOf(t, s, 1, `{"id": 2, "name": "b"}`)...)
	src.hw[0] = 2
	if _, err := round(0); !errors.Is(err, lake.ErrFenced) { // built on version 0: its files are garbage
		t.Fatalf("a round on a replaced version: %v", err)
	}
	res, err := round(1)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n := 0
		_ = store.List(ctx, "lake/app/gc-6/", func(tiering.ObjectInfo) error { n++; return nil })
		return n
	}
	before := count()
	m, _, err := tbl.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tbl.CollectGarbage(ctx, m, res.MetadataKey, time.Now(), time.Hour); err != nil || n != 0 {
		t.Fatalf("within the grace: %d deleted, %v", n, err)
	}
	deleted, err := tbl.CollectGarbage(ctx, m, res.MetadataKey, time.Now().Add(2*time.Hour), time.Hour)
	// The fenced round's data file, manifest, manifest list and staged
	// metadata, and version 1's staged metadata.
	if err != nil || deleted != 5 || count() != before-5 {
		t.Fatalf("collected %d of %d objects (%d left), %v; want 5", deleted, before, count(), err)
	}
	m, v, err := tbl.ReadCurrent(ctx)
	if err != nil || v != 2 {
		t.Fatalf("current version %d, %v", v, err)
	}
	if n, err := tbl.Rows(ctx, m); err != nil || n != 2 {
		t.Fatalf("after collecting the lake holds %d rows, %v", n, err)
	}
	if _, err := tbl.ReadVersion(ctx, 1); err != nil {
		t.Fatalf("published version 1 collected: %v", err)
	}
	manifests, err := tbl.ReadManifestList(ctx, m.CurrentSnapshot().ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range manifests {
		entries, err := tbl.ReadManifest(ctx, mf.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, err := store.Stat(ctx, strings.TrimPrefix(e.File.Path, strings.TrimSuffix(store.String(), "/")+"/")); err != nil {
				t.Fatalf("data file %s of the current snapshot: %v", e.File.Path, err)
			}
		}
	}
	if _, err := tbl.ReadStaged(ctx, res.MetadataKey); err != nil {
		t.Fatalf("the committed version's staged metadata collected: %v", err)
	}
}
