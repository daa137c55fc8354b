package client

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/icebergrest"
	"github.com/floedb/floe/internal/testkit/s3test"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// guard bounds every wait in these tests, so a bug fails a test instead of
// hanging it. Nothing is expected to take anywhere near this long.
const guard = 30 * time.Second

const testSchema = "id BIGINT NOT NULL, name STRING"

// The package's tests share one three-node cluster of real nodes; each test
// makes its tables in a database of its own, and a test that stops a node
// starts it again before it ends.
var shared = testcluster.Shared{Options: testcluster.Options{Nodes: 3}}

// remoteStore is where the shared cluster tiers to.
var remoteStore *tiering.Folder

// lakeCatalog is the REST catalog the shared cluster registers lake
// tables in (a fake of the spec's, internal/testkit/icebergrest).
var lakeCatalog *icebergrest.Catalog

// s3server is a real S3 server for the tests that want one (skipped
// without it; see internal/testkit/s3test).
var s3server s3test.Server

func TestMain(m *testing.M) {
	// The nodes tier sealed segments to a folder every 100 ms; only tables
	// that roll small segments (remote_scan_test.go) reach it.
	remoteDir, err := os.MkdirTemp("", "floe-client-remote-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if remoteStore, err = tiering.NewFolder(remoteDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared.Options.Remote, shared.Options.TieringInterval = remoteStore, 100*time.Millisecond
	lakeCatalog = icebergrest.New(icebergrest.StoreReader(remoteStore), "catalog-token")
	catalogServer := httptest.NewServer(lakeCatalog)
	if shared.Options.LakeCatalog, err = lake.NewRESTCatalog(catalogServer.URL, "wh", "catalog-token"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	catalogServer.Close()
	os.RemoveAll(remoteDir)
	if err := s3server.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the S3 server:", err)
	}
	if err := shared.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the test cluster:", err)
	}
	if err := exampleCluster.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the examples' cluster:", err)
	}
	os.Exit(code)
}

// testCluster is the shared cluster as one test sees it.
type testCluster struct {
	*testcluster.Cluster
	t  *testing.T
	db string // the test's database
}

// startCluster returns the shared cluster (started on first use) and a
// client connected to it, closed at the end of the test.
func startCluster(t *testing.T) (*testCluster, *Client) {
	t.Helper()
	cl, err := shared.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(t.Context(), cl.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &testCluster{Cluster: cl, t: t, db: testcluster.NameFor(t.Name())}, c
}

// createTable creates db.name with replication replicas, and opens it.
func (fc *testCluster) createTable(c *Client, name, schema string, buckets, replication int32, bucketKey ...string) *Table {
	fc.t.Helper()
	_, err := fc.CreateTable(fc.t.Context(), testcluster.TableSpec{Database: fc.db, Name: name, Schema: schema,
		Buckets: buckets, BucketKey: bucketKey, Replication: replication})
	if err != nil {
		fc.t.Fatal(err)
	}
	tbl, err := c.Table(fc.t.Context(), fc.db, name)
	if err != nil {
		fc.t.Fatal(err)
	}
	return tbl
}

// openTable creates a log table of testSchema, one replica per bucket, and
// opens it.
func openTable(t *testing.T, fc *testCluster, c *Client, name string, buckets int32, bucketKey ...string) *Table {
	t.Helper()
	return fc.createTable(c, name, testSchema, buckets, 1, bucketKey...)
}

// records reads a bucket's committed records from its leader.
func (fc *testCluster) records(tbl *Table, bucket int32) []testcluster.Record {
	fc.t.Helper()
	recs, err := fc.Records(fc.t.Context(), tbl.info.Database, tbl.info.Name, bucket)
	if err != nil {
		fc.t.Fatal(err)
	}
	return recs
}

// highWatermark is a bucket's high watermark as its leader reports it.
func (fc *testCluster) highWatermark(tbl *Table, bucket int32) int64 {
	fc.t.Helper()
	hw, err := fc.HighWatermark(fc.t.Context(), tbl.info.Database, tbl.info.Name, bucket)
	if err != nil {
		fc.t.Fatal(err)
	}
	return hw
}

// leader is the node leading a bucket.
func (fc *testCluster) leader(tbl *Table, bucket int32) *testcluster.Node {
	fc.t.Helper()
	id, err := fc.WaitLeader(fc.t.Context(), tbl.info.Database, tbl.info.Name, bucket, func(l uint32) bool { return l != 0 })
	if err != nil {
		fc.t.Fatal(err)
	}
	return fc.Node(id)
}

// leaderProxy is the proxy in front of a bucket's leader.
func (fc *testCluster) leaderProxy(tbl *Table, bucket int32) *testcluster.Proxy {
	fc.t.Helper()
	return fc.leader(tbl, bucket).Proxy()
}

// moveLeader moves a bucket's leadership to another replica, as a leader
// failover does: it stops the leader, waits for the controller to elect
// another, and starts the old one again, now a follower, once the table is
// served by all its replicas again. A handle made before still names the
// old leader. It returns the new leader.
func (fc *testCluster) moveLeader(tbl *Table, bucket int32) *testcluster.Node {
	fc.t.Helper()
	ctx := fc.t.Context()
	old := fc.leader(tbl, bucket)
	if err := old.Stop(); err != nil {
		fc.t.Fatal(err)
	}
	id, err := fc.WaitLeader(ctx, tbl.info.Database, tbl.info.Name, bucket, func(l uint32) bool { return l != 0 && l != old.ID })
	if err != nil {
		fc.t.Fatal(err)
	}
	if err := fc.Restart(ctx, old); err != nil {
		fc.t.Fatal(err)
	}
	if err := fc.WaitServing(ctx, tbl.info.Database, tbl.info.Name); err != nil {
		fc.t.Fatal(err)
	}
	return fc.Node(id)
}

// testRow encodes (id, name).
func testRow(t testing.TB, tbl *Table, id int64, name string) []byte {
	t.Helper()
	e := tbl.NewRowEncoder()
	e.SetInt64(0, id)
	e.SetString(1, name)
	row, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// rowID reads the id of a row of testSchema.
func rowID(tbl *Table, row []byte) int64 {
	return record.NewRowView(tbl.schema, row).Int64(0)
}

// guardCtx returns a context that ends after guard.
func guardCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	t.Cleanup(cancel)
	return ctx
}

// newWriter makes a writer closed at the end of the test.
func newWriter(t *testing.T, tbl *Table, opts AppendWriterOptions) *AppendWriter {
	t.Helper()
	w, err := tbl.NewAppendWriter(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w
}

// appendIDs appends rows id from..to-1 and returns their futures.
func appendIDs(t *testing.T, w *AppendWriter, tbl *Table, from, to int64) []*AppendFuture {
	t.Helper()
	var fs []*AppendFuture
	ctx := guardCtx(t)
	for id := from; id < to; id++ {
		f, err := w.Append(ctx, testRow(t, tbl, id, fmt.Sprintf("row-%d", id)))
		if err != nil {
			t.Fatalf("append %d: %v", id, err)
		}
		fs = append(fs, f)
	}
	return fs
}
