package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/client/clienttest"
	"github.com/floedb/floe/storage/record"
)

// guard bounds every wait in these tests, so a bug fails a test instead of
// hanging it. Nothing is expected to take anywhere near this long.
const guard = 20 * time.Second

const testSchema = "id BIGINT NOT NULL, name STRING"

// startCluster starts a fake cluster and connects a client to it; both stop
// at the end of the test.
func startCluster(t *testing.T, nodes int) (*clienttest.Cluster, *Client) {
	t.Helper()
	fc, err := clienttest.Start(clienttest.Options{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fc.Close() })
	c, err := Connect(t.Context(), fc.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return fc, c
}

// openTable creates db.name in the fake and opens it.
func openTable(t *testing.T, fc *clienttest.Cluster, c *Client, name string, buckets int32, bucketKey ...string) *Table {
	t.Helper()
	if _, err := fc.CreateTable("db", name, testSchema, buckets, bucketKey...); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(t.Context(), "db", name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
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
