package lake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

const testSchema = "id BIGINT NOT NULL, dt DATE NOT NULL, name STRING, small SMALLINT, at TIMESTAMP(3), tags ARRAY<STRING>, attrs MAP<STRING, INT>, pos ROW<x DOUBLE, y DOUBLE>"

// writeTestTable writes rows (JSON objects of testSchema) as one data file
// per dt value into a lake table partitioned by dt, one commit, and
// returns the table and the committed metadata.
func writeTestTable(t *testing.T, store tiering.ObjectStore, rows []string) (*lake.Table, *lake.Metadata) {
	t.Helper()
	ctx := context.Background()
	s, err := record.ParseSchema(testSchema)
	if err != nil {
		t.Fatal(err)
	}
	last := 0
	ls, err := lake.NewSchema(0, s, nil, &last)
	if err != nil {
		t.Fatal(err)
	}
	tbl := lake.NewTable(store, "wh/app/events")
	create := func() (*lake.Metadata, error) {
		return lake.NewMetadata(tbl.Location(), "6f1c2b1e-1d5e-4a57-9a4b-2b8d7c1f0a11", ls, last, []string{"dt"}, nil, 1000)
	}
	meta, err := create()
	if err != nil {
		t.Fatal(err)
	}
	byDay := map[int32][][]byte{}
	var days []int32
	for _, js := range rows {
		row, err := record.AppendRowFromJSON(nil, s, []byte(js))
		if err != nil {
			t.Fatalf("row %s: %v", js, err)
		}
		day := int32(record.NewRowView(s, row).Int64(1))
		if byDay[day] == nil {
			days = append(days, day)
		}
		byDay[day] = append(byDay[day], row)
	}
	var files []lake.DataFile
	offset := int64(0)
	for _, day := range days {
		fb, err := lake.NewFileBuilder(s, ls)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range byDay[day] {
			if err := fb.Append(row, 3, offset, 1_700_000_000_000+offset); err != nil {
				t.Fatal(err)
			}
			offset++
		}
		body, df, err := fb.Finish()
		if err != nil {
			t.Fatal(err)
		}
		part := []lake.PartitionValue{{Type: "date", Value: day}}
		key := tbl.DataFileKey(meta.Spec(), part, fmt.Sprintf("b3-%d", offset))
		if df, err = tbl.PutDataFile(ctx, key, body, df, part); err != nil {
			t.Fatal(err)
		}
		files = append(files, df)
	}
	staged, err := tbl.StageAppend(ctx, nil, 0, create, files, map[string]string{"floe.log-offsets": `{"3":` + fmt.Sprint(offset) + `}`}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Publish(ctx, 1, staged.Key); err != nil {
		t.Fatal(err)
	}
	got, err := tbl.ReadVersion(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, got
}

var testRows = []string{
	`{"id": 1, "dt": "2026-12-03", "name": "ann", "small": 7, "at": "2026-12-03 10:00:00.125", "tags": ["a", "b"], "attrs": {"k": 1}, "pos": {"x": 1.5, "y": -2}}`,
	`{"id": 2, "dt": "2026-12-03", "name": null, "small": null, "at": null, "tags": null, "attrs": null, "pos": null}`,
	`{"id": 3, "dt": "2026-12-04", "name": "bob", "small": -3, "at": "1969-12-31 23:59:59.999", "tags": [], "attrs": {}, "pos": {"x": 0, "y": 0}}`,
}

// TestLakeWritesIcebergTable: a table written and committed reads back:
// metadata (schema with ids, identity spec, snapshot with its summary),
// manifest list, and Parquet files whose columns carry the field ids and
// hold the rows, cast to Iceberg's types.
func TestLakeWritesIcebergTable(t *testing.T) {
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, meta := writeTestTable(t, store, testRows)
	snap := meta.CurrentSnapshot()
	if snap == nil || snap.Summary["operation"] != "append" || snap.Summary["added-records"] != "3" || snap.Summary["floe.log-offsets"] != `{"3":3}` {
		t.Fatalf("snapshot %+v", snap)
	}
	if spec := meta.Spec(); len(spec.Fields) != 1 || spec.Fields[0].Name != "dt" || spec.Fields[0].Transform != "identity" || spec.Fields[0].FieldID != 1000 {
		t.Fatalf("spec %+v", spec)
	}
	schemaJSON, _ := json.Marshal(meta.CurrentSchema())
	for _, want := range []string{`"name":"small","required":false,"type":"int"`, `"name":"at","required":false,"type":"timestamp"`,
		`"type":"list","element-id":`, `"type":"map","key-id":`, `"name":"__offset","required":true,"type":"long"`} {
		if !bytes.Contains(schemaJSON, []byte(want)) {
			t.Errorf("schema lacks %s: %s", want, schemaJSON)
		}
	}
	manifests, err := tbl.ReadManifestList(context.Background(), snap.ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	if len(manifests) != 1 || manifests[0].Added != 2 || manifests[0].AddedRows != 3 || len(manifests[0].Partitions) != 1 {
		t.Fatalf("manifests %+v", manifests)
	}
	// The data files, read back with pqarrow.
	var ids []int64
	var smalls []string
	err = store.List(context.Background(), "wh/app/events/data/", func(oi tiering.ObjectInfo) error {
		rc, err := store.Get(context.Background(), oi.Key, 0, -1)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(rc)
		rc.Close()
		pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			return err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		tb, err := fr.ReadTable(context.Background())
		if err != nil {
			return err
		}
		defer tb.Release()
		sc := tb.Schema()
		if id, ok := sc.Field(0).Metadata.GetValue("PARQUET:field_id"); !ok || id != "1" {
			t.Errorf("column id has field id %q", id)
		}
		if f := sc.Field(3); f.Type.ID() != arrow.INT32 {
			t.Errorf("SMALLINT column is %v in Parquet, want int32", f.Type)
		}
		if f := sc.Field(4); f.Type.(*arrow.TimestampType).Unit != arrow.Microsecond {
			t.Errorf("TIMESTAMP column is %v in Parquet, want microseconds", f.Type)
		}
		for c := 0; c < int(tb.NumRows()); c++ {
			_ = c
		}
		idCol := tb.Column(0).Data().Chunk(0)
		smallCol := tb.Column(3).Data().Chunk(0)
		for i := range idCol.Len() {
			ids = append(ids, idCol.(interface{ Value(int) int64 }).Value(i))
			smalls = append(smalls, smallCol.ValueStr(i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[1 2 3]" || fmt.Sprint(smalls) != "[7 (null) -3]" {
		t.Fatalf("ids %v, smalls %v", ids, smalls)
	}
}

// TestNewSchemaKeepsIDs: a column added by ALTER TABLE takes a new id and
// every other field keeps its own, nested ones too.
func TestNewSchemaKeepsIDs(t *testing.T) {
	before, _ := record.ParseSchema("id BIGINT NOT NULL, tags ARRAY<STRING>")
	after, _ := record.ParseSchema("id BIGINT NOT NULL, tags ARRAY<STRING>, note STRING")
	last := 0
	s1, err := lake.NewSchema(0, before, nil, &last)
	if err != nil {
		t.Fatal(err)
	}
	lastAfterFirst := last
	s2, err := lake.NewSchema(1, after, &s1, &last)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(s1.Fields[:2])
	j2, _ := json.Marshal(s2.Fields[:2])
	if string(j1) != string(j2) {
		t.Fatalf("kept fields changed:\n%s\n%s", j1, j2)
	}
	if s2.Fields[2].Name != "note" || s2.Fields[2].ID != lastAfterFirst+1 || last != lastAfterFirst+1 {
		t.Fatalf("added column %+v, last id %d (was %d)", s2.Fields[2], last, lastAfterFirst)
	}
	for i, f := range s2.Fields[3:] {
		if f.ID != s1.Fields[2+i].ID || f.Name != s1.Fields[2+i].Name {
			t.Fatalf("system column %s has id %d, was %d", f.Name, f.ID, s1.Fields[2+i].ID)
		}
	}
}

// TestExpireSnapshotsBound: whatever the retention, at most MaxSnapshots
// stay, the newest, the current one always.
func TestExpireSnapshotsBound(t *testing.T) {
	s, _ := record.ParseSchema("id BIGINT NOT NULL")
	last := 0
	ls, err := lake.NewSchema(0, s, nil, &last)
	if err != nil {
		t.Fatal(err)
	}
	m, err := lake.NewMetadata("file:///x", "7d2f4c1a-7b3e-4e55-8f0b-5a2c3d4e5f60", ls, last, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lake.MaxSnapshots + 5 {
		m.AddSnapshot(lake.Snapshot{ID: int64(i + 1), TimestampMs: int64(i), ManifestList: "file:///x/l", Summary: map[string]string{"operation": "append"}}, "")
	}
	dropped := m.ExpireSnapshots(int64(lake.MaxSnapshots+5), 0) // retention forever
	if len(dropped) != 5 || dropped[0].ID != 1 || len(m.Snapshots) != lake.MaxSnapshots || m.CurrentSnapshot() == nil {
		t.Fatalf("dropped %d (first %d), kept %d, current %v", len(dropped), dropped[0].ID, len(m.Snapshots), m.CurrentSnapshot())
	}
	if len(m.ExpireSnapshots(int64(lake.MaxSnapshots+5), 0)) != 0 {
		t.Fatal("expiry dropped snapshots within the bound")
	}
}

// TestEnsurePublished: a committed version that was not published (its
// round's publish failed) is published by EnsurePublished, and
// version-hint.text never goes back to an older version.
func TestEnsurePublished(t *testing.T) {
	ctx := context.Background()
	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := writeTestTable(t, store, testRows)
	_, v1, err := tbl.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	staged1 := tbl.VersionFile(v1)
	// Version v1+1, committed but not published.
	staged2 := strings.TrimSuffix(staged1, path.Base(staged1)) + "unpublished.metadata.json"
	rc, err := store.Get(ctx, staged1, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, staged2, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if published, err := tbl.EnsurePublished(ctx, v1, staged1); err != nil || published {
		t.Fatalf("version %d, published already: published again %v (%v)", v1, published, err)
	}
	if published, err := tbl.EnsurePublished(ctx, v1+1, staged2); err != nil || !published {
		t.Fatalf("version %d, committed: published %v (%v)", v1+1, published, err)
	}
	if _, n, err := tbl.ReadCurrent(ctx); err != nil || n != v1+1 {
		t.Fatalf("the hint names version %d (%v), want %d", n, err, v1+1)
	}
	// A late publish of the older version leaves the hint where it is.
	if err := tbl.Publish(ctx, v1, staged1); err != nil {
		t.Fatal(err)
	}
	if _, n, err := tbl.ReadCurrent(ctx); err != nil || n != v1+1 {
		t.Fatalf("after a late publish of version %d the hint names %d (%v), want %d", v1, n, err, v1+1)
	}
}
