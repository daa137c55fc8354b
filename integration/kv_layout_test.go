package integration

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

// TestKVMovesEarlierLayout starts a node on a data folder as an earlier
// build left it (one Badger database per primary-key bucket replica, in the
// replica's folder) and checks that it moves each store into the node's
// database and serves it as it was, without rebuilding it from the log.
func TestKVMovesEarlierLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	c := StartCluster(t, 1, ClusterOptions{})
	nd := c.Nodes[0]
	ctx := t.Context()
	cl := c.Client(ctx)
	const keys = 200
	tbl := fillKVTable(t, cl, "kv", 2, keys)
	c.Stop(nd)

	// Put the node's stores back in the earlier layout. Key 0 gets a value
	// its log never had: served, it shows the store was moved, not rebuilt.
	tablet := filepath.Join(nd.DataDir, "tablet")
	db, err := kvstore.OpenDB(kvstore.Config{Dir: filepath.Join(tablet, "kv")})
	if err != nil {
		t.Fatal(err)
	}
	planted := false
	var ids []kvstore.StoreID
	for bucket := range uint32(2) {
		id := kvstore.StoreID{Table: tbl.ID(), Bucket: bucket}
		s, err := db.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string][]byte{}
		applied, err := s.Export(func(key []byte, r kvstore.Row) error {
			row := r.Data
			if record.NewRowView(tbl.Schema(), row).Int64(0) == 0 {
				enc, _ := record.NewRowEncoder(tbl.Schema())
				enc.SetInt64(0, 0)
				enc.SetString(1, "k")
				enc.SetString(2, "n")
				enc.SetInt64(3, -1)
				var err error
				if row, err = enc.Finish(nil); err != nil {
					return err
				}
				planted = true
			}
			rows[string(key)] = slices.Clone(row)
			return nil
		})
		if err != nil || applied == 0 {
			t.Fatalf("bucket %d: applied offset %d, %v", bucket, applied, err)
		}
		writeEarlierStore(t, filepath.Join(tablet, fmt.Sprintf("t%d-b%d", tbl.ID(), bucket), "kv"), rows, applied)
		s.Close()
		ids = append(ids, id)
	}
	if !planted {
		t.Fatal("no bucket holds key 0")
	}
	if err := db.Drop(ids...); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	c.Restart(nd)
	l, err := tbl.NewLookuper(client.LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batch := kvClientKeys(t, tbl, keys)
	var rows [][]byte
	waitFor(t, 30*time.Second, "lookups on the restarted node", func() bool {
		rows, err = l.LookupBatch(ctx, batch)
		return err == nil
	})
	for a, row := range rows {
		want := int64(a)
		if a == 0 {
			want = -1
		}
		if row == nil || record.NewRowView(tbl.Schema(), row).Int64(3) != want {
			t.Fatalf("key %d after the move: %s, want v %d", a, rowJSONOf(t, tbl, row), want)
		}
	}
	for bucket := range 2 {
		dir := filepath.Join(tablet, fmt.Sprintf("t%d-b%d", tbl.ID(), bucket), "kv")
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the earlier store %s is still there (%v)", dir, err)
		}
	}
}

// writeEarlierStore writes a store as earlier builds kept it: its own
// Badger database, rows under 'r' | key and the applied offset under
// "mapplied_offset".
func writeEarlierStore(t *testing.T, dir string, rows map[string][]byte, applied int64) {
	t.Helper()
	old, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	wb := old.NewWriteBatch()
	for k, v := range rows {
		if err := wb.Set(append([]byte{'r'}, k...), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := wb.Set([]byte("mapplied_offset"), binary.BigEndian.AppendUint64(nil, uint64(applied))); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestKVDropTableDropsItsStores drops one of two primary-key tables and
// checks, in the stopped node's database, that the dropped table's stores
// are gone and the other's are whole.
func TestKVDropTableDropsItsStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	c := StartCluster(t, 1, ClusterOptions{})
	nd := c.Nodes[0]
	ctx := t.Context()
	cl := c.Client(ctx)
	tables := map[string]*client.Table{}
	for _, name := range []string{"keep", "drop"} {
		tables[name] = fillKVTable(t, cl, name, 3, 100)
	}
	if err := cl.Admin().DropTable(ctx, "lay", "drop"); err != nil {
		t.Fatal(err)
	}
	tablet := filepath.Join(nd.DataDir, "tablet")
	waitFor(t, 30*time.Second, "the dropped table's replicas to go", func() bool {
		for bucket := range 3 {
			if _, err := os.Stat(filepath.Join(tablet, fmt.Sprintf("t%d-b%d", tables["drop"].ID(), bucket))); err == nil {
				return false
			}
		}
		return true
	})
	c.Stop(nd) // a clean stop finishes the drops it queued

	db, err := kvstore.OpenDB(kvstore.Config{Dir: filepath.Join(tablet, "kv")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids, err := db.StoreIDs()
	if err != nil {
		t.Fatal(err)
	}
	keep := tables["keep"].ID()
	want := []kvstore.StoreID{{Table: keep, Bucket: 0}, {Table: keep, Bucket: 1}, {Table: keep, Bucket: 2}}
	if !slices.Equal(ids, want) {
		t.Fatalf("stores in the node's database after the drop: %v, want only the kept table's %v", ids, want)
	}
	rows := 0
	for _, id := range ids {
		s, err := db.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Export(func([]byte, kvstore.Row) error { rows++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if rows != 100 {
		t.Fatalf("the kept table holds %d rows, want 100", rows)
	}
}

// fillKVTable creates table lay.NAME of kvClientSchema with one replica of
// each bucket, and upserts keys rows {a: i, b: "k", v: i}.
func fillKVTable(t *testing.T, cl *client.Client, name string, buckets int32, keys int) *client.Table {
	t.Helper()
	ctx := t.Context()
	if err := cl.Admin().CreateDatabase(ctx, "lay", client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "lay", Name: name, Schema: kvClientSchema,
		PrimaryKey: []string{"a", "b"}, Buckets: buckets, Replication: 1}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, "lay", name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for a := range keys {
		f, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":"k","name":"n","v":%d}`, a, a))
		mustFuture(t, ctx, f, err)
	}
	return tbl
}

// kvClientKeys returns the primary keys {a: i, b: "k"} of kvClientSchema
// for i below n.
func kvClientKeys(t testing.TB, tbl *client.Table, n int) [][]byte {
	t.Helper()
	keys := make([][]byte, 0, n)
	for a := range n {
		enc, _ := record.NewRowEncoder(tbl.PrimaryKeySchema())
		enc.SetInt64(0, int64(a))
		enc.SetString(1, "k")
		key, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}
