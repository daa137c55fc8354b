package client

import (
	"context"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
)

const kvSchema = "id BIGINT NOT NULL, name STRING NOT NULL, score INT, PRIMARY KEY (id)"

// openKVTable creates a primary-key table, one replica per bucket, and
// opens it.
func openKVTable(t *testing.T, fc *testCluster, c *Client, name, schema string, buckets int32, bucketKey ...string) *Table {
	t.Helper()
	return fc.createTable(c, name, schema, buckets, 1, bucketKey...)
}

// newUpsertWriter makes a writer closed at the end of the test.
func newUpsertWriter(t *testing.T, tbl *Table, opts UpsertWriterOptions) *UpsertWriter {
	t.Helper()
	w, err := tbl.NewUpsertWriter(opts)
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

// newLookuper makes a lookuper closed at the end of the test.
func newLookuper(t *testing.T, tbl *Table, opts LookuperOptions) *Lookuper {
	t.Helper()
	l, err := tbl.NewLookuper(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// keyOf encodes primary key id of kvSchema.
func keyOf(t testing.TB, tbl *Table, id int64) []byte {
	t.Helper()
	e, err := record.NewRowEncoder(tbl.PrimaryKeySchema())
	if err != nil {
		t.Fatal(err)
	}
	e.SetInt64(0, id)
	key, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// rowJSON returns a row as JSON, "" for nil.
func rowJSON(t testing.TB, tbl *Table, row []byte) string {
	t.Helper()
	if row == nil {
		return ""
	}
	js, err := tbl.JSONCodec().AppendJSON(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// waitFor waits until cond holds, failing the test after guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		select {
		case <-tick.C:
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}
