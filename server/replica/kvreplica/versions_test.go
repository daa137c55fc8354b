package kvreplica

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// idleLog is a Log of an empty bucket this node leads at epoch 1: the KV
// side reads its store and never its log. Methods the tests here do not
// reach panic.
type idleLog struct {
	Log
	dir     string
	changes chan struct{}
}

func (l *idleLog) ID() replica.BucketID             { return replica.BucketID{TableID: 7} }
func (l *idleLog) Dir() string                      { return l.dir }
func (l *idleLog) HighWatermark() int64             { return 0 }
func (l *idleLog) StartOffset() int64               { return 0 }
func (l *idleLog) EndOffset() int64                 { return 0 }
func (l *idleLog) LeaderEpoch() (int32, error)      { return 1, nil }
func (l *idleLog) Changes() <-chan struct{}         { return l.changes }
func (l *idleLog) Notify()                          {}
func (l *idleLog) NewestKVSnapshot() *pb.KVSnapshot { return nil }
func (l *idleLog) RemoteStore() tiering.ObjectStore { return nil }
func (l *idleLog) ReadBelow(int64, int64, int) (*logstore.Records, error) {
	return &logstore.Records{}, nil
}
func (l *idleLog) WaitChange(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	return false
}

// usersRecord is a primary-key table of schema versions 1 (id, name) and,
// with altered, 2 (note added).
func usersRecord(altered bool) *pb.TableRecord {
	v1 := []*pb.Column{{Name: "id", Type: "BIGINT"}, {Name: "name", Type: "STRING", Nullable: true}}
	rec := &pb.TableRecord{Id: 7, Database: "db", Name: "users", Replication: 1, PrimaryKey: []string{"id"},
		Schemas: []*pb.SchemaVersion{{Id: 1, Columns: v1}}}
	if altered {
		v2 := append(append([]*pb.Column(nil), v1...), &pb.Column{Name: "note", Type: "STRING", Nullable: true})
		rec.Schemas = append(rec.Schemas, &pb.SchemaVersion{Id: 2, Columns: v2})
	}
	return rec
}

// openIdleKV opens the KV side of an idleLog bucket of table rec on a node
// of its own.
func openIdleKV(t *testing.T, rec *pb.TableRecord) (*kvReplica, *table) {
	t.Helper()
	tables, err := New(Config{DB: kvstore.Config{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tables.Close)
	tbl := usersTable(t, tables, rec)
	kv, err := openKV(&idleLog{dir: t.TempDir(), changes: make(chan struct{})}, tbl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close(false) })
	return kv, tbl
}

func usersTable(t *testing.T, tables *Tables, rec *pb.TableRecord) *table {
	t.Helper()
	versions, err := replica.SchemaVersions(rec)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := tables.Table(rec, "db.users", versions[len(versions)-1].Schema)
	if err != nil {
		t.Fatal(err)
	}
	return kt.(*table)
}

// TestSnapshotRestoreAcrossAddColumn: a KV snapshot of a store holding rows
// written before and after an ADD COLUMN, restored on a new replica, keeps
// every row readable: lookups and scans answer them in the current version
// (which they name), the column null in the rows written before it.
func TestSnapshotRestoreAcrossAddColumn(t *testing.T) {
	ctx := t.Context()
	kv, v1 := openIdleKV(t, usersRecord(false))
	apply := func(tbl *table, offset int64, ids []int64, note bool) {
		t.Helper()
		s := tbl.schema
		var changes []kvstore.Change
		for _, id := range ids {
			enc, err := record.NewRowEncoder(s)
			if err != nil {
				t.Fatal(err)
			}
			enc.SetInt64(0, id)
			enc.SetString(1, fmt.Sprint("u", id))
			if note {
				enc.SetString(2, fmt.Sprint("n", id))
			}
			row, err := enc.Finish(nil)
			if err != nil {
				t.Fatal(err)
			}
			key, err := tbl.keys.RowKey(nil, row)
			if err != nil {
				t.Fatal(err)
			}
			changes = append(changes, kvstore.Change{Key: key, Row: row, Kind: record.Insert, SchemaID: tbl.currentID()})
		}
		if err := kv.store.Load().Apply(changes, offset); err != nil {
			t.Fatal(err)
		}
	}
	apply(v1, 1, []int64{0, 1, 2, 3}, false)
	v2 := usersTable(t, kv.tables, usersRecord(true))
	kv.SetTable(v2)
	apply(v2, 2, []int64{3, 4, 5}, true)

	store, err := tiering.NewFolder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	snap, err := kv.Snapshot(ctx, tiering.KVSnapshotConfig{Store: store, Root: "c", TableID: 7, TempDir: t.TempDir()}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	restored, _ := openIdleKV(t, usersRecord(true))
	if off, err := restored.Restore(ctx, store, snap.ManifestKey); err != nil || off != 2 {
		t.Fatalf("restore: offset %d, %v", off, err)
	}

	want := func(id int64) string {
		if id >= 3 {
			return fmt.Sprintf(`{"id":%d,"name":"u%d","note":"n%d"}`, id, id, id)
		}
		return fmt.Sprintf(`{"id":%d,"name":"u%d","note":null}`, id, id)
	}
	req := &pb.LookupRequest{}
	for id := range int64(6) {
		enc, err := record.NewRowEncoder(v2.keys.KeySchema())
		if err != nil {
			t.Fatal(err)
		}
		enc.SetInt64(0, id)
		key, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Keys = append(req.Keys, key)
	}
	resp, err := restored.Lookup(ctx, req)
	if err != nil || resp.SchemaId != 2 {
		t.Fatalf("lookup: schema id %d, %v", resp.GetSchemaId(), err)
	}
	at := 0
	for id, n := range resp.RowSizes {
		js, err := record.AppendRowJSON(nil, v2.schema, resp.Rows[at:at+int(n)])
		if err != nil || string(js) != want(int64(id)) {
			t.Fatalf("lookup of %d: %s, %v; want %s", id, js, err, want(int64(id)))
		}
		at += int(n)
	}
	page, err := restored.ScanRows(ctx, &pb.ScanRowsRequest{})
	if err != nil || page.SchemaId != 2 || len(page.RowSizes) != 6 {
		t.Fatalf("scan: %d rows of schema version %d, %v", len(page.GetRowSizes()), page.GetSchemaId(), err)
	}
	at = 0
	for id, n := range page.RowSizes {
		js, err := record.AppendRowJSON(nil, v2.schema, page.Rows[at:at+int(n)])
		if err != nil || string(js) != want(int64(id)) {
			t.Fatalf("scanned row %d: %s, %v; want %s", id, js, err, want(int64(id)))
		}
		at += int(n)
	}
}

// TestChangelogOfUnknownVersionWaits: a changelog batch of a schema version
// the node's metadata lacks is not keyed with another version's keys (its
// null bitmap may be wider, moving every slot): it waits
// (errVersionAhead); a control batch has no rows to key.
func TestChangelogOfUnknownVersionWaits(t *testing.T) {
	first, err := record.ParseSchema("id BIGINT NOT NULL PRIMARY KEY, a STRING")
	if err != nil {
		t.Fatal(err)
	}
	tb := &table{name: "db.t", schema: first}
	if tb.keys, err = kvstore.NewKeys(first, nil); err != nil {
		t.Fatal(err)
	}
	if err := newVersions(tb, []replica.SchemaVersion{{ID: 1, Schema: first}}, nil); err != nil {
		t.Fatal(err)
	}
	batch := func(id int16, format record.PayloadFormat, row []byte) record.Batch {
		bld := record.NewBatchBuilder(record.BatchOptions{SchemaID: id, Format: format}, 0)
		if err := bld.Append(record.UpdateAfter, row); err != nil {
			t.Fatal(err)
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	row := []byte{0}
	if _, err := tb.keysOf(batch(2, record.PayloadRows, row)); !errors.Is(err, errVersionAhead) {
		t.Fatalf("keys of a batch of version 2 with version 1 known: %v, want errVersionAhead", err)
	}
	if keys, err := tb.keysOf(batch(1, record.PayloadRows, row)); err != nil || keys != tb.versionKeys[0] {
		t.Fatalf("keys of a batch of version 1: %v", err)
	}
	if keys, err := tb.keysOf(batch(9, record.PayloadControl, []byte{byte(record.ControlNoop)})); err != nil || keys != tb.keys {
		t.Fatalf("keys of a control batch: %v", err)
	}
}
