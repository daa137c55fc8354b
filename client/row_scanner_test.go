package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// scanBucket reads a bucket with a RowScanner and returns its rows and the
// number of pages.
func scanBucket(t *testing.T, tbl *Table, bucket int32, opts RowScannerOptions) (rows [][]byte, pages int) {
	t.Helper()
	s, err := tbl.NewRowScanner(bucket, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := guardCtx(t)
	for {
		page, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			return rows, pages
		}
		if err != nil {
			t.Fatalf("bucket %d page %d: %v", bucket, pages+1, err)
		}
		pages++
		rows = append(rows, page...)
	}
}

// TestRowScannerPages: small pages give every row of each bucket once, in
// key order, and nothing deleted.
func TestRowScannerPages(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openKVTable(t, fc, c, "kv", kvSchema, 3)
	upsertIDs(t, tbl, 0, 200)
	w := newUpsertWriter(t, tbl, UpsertWriterOptions{})
	ctx := guardCtx(t)
	want := map[int64]bool{}
	for i := range int64(200) {
		want[i] = true
		if i%7 == 0 {
			if _, err := w.DeleteJSON(ctx, fmt.Appendf(nil, `{"id":%d}`, i)); err != nil {
				t.Fatal(err)
			}
			delete(want, i)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for b := range tbl.Buckets() {
		before := fc.leaderProxy(tbl, b).Calls(testcluster.RPCScanRows)
		rows, pages := scanBucket(t, tbl, b, RowScannerOptions{PageRows: 7})
		if calls := fc.leaderProxy(tbl, b).Calls(testcluster.RPCScanRows) - before; calls != pages && calls != pages+1 {
			t.Fatalf("bucket %d: %d pages in %d calls", b, pages, calls)
		}
		if want := (len(rows) + 6) / 7; pages != want {
			t.Fatalf("bucket %d: %d rows in %d pages, want %d pages", b, len(rows), pages, want)
		}
		var prev []byte
		for _, row := range rows {
			id := rowID(tbl, row)
			if seen[id] || !want[id] {
				t.Fatalf("bucket %d: row %d repeated or deleted", b, id)
			}
			seen[id] = true
			if got, _ := tbl.BucketOf(row); got != b {
				t.Fatalf("row %d of bucket %d scanned in bucket %d", id, got, b)
			}
			if v := record.NewRowView(tbl.schema, row); v.String(1) != fmt.Sprintf("n%d", id) {
				t.Fatalf("row %d: name %q", id, v.String(1))
			}
			key, _ := tbl.PrimaryKeyOf(nil, row)
			if prev != nil && bytes.Compare(prev, key) >= 0 {
				t.Fatalf("bucket %d: key of row %d does not follow the one before", b, id)
			}
			prev = key
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("scanned %d rows, want %d", len(seen), len(want))
	}
	if _, err := openTable(t, fc, c, "log", 1).NewRowScanner(0, RowScannerOptions{}); !errors.Is(err, ErrNotPrimaryKeyTable) {
		t.Fatalf("log table: %v", err)
	}
	if _, err := tbl.NewRowScanner(3, RowScannerOptions{}); err == nil {
		t.Fatal("bucket 3 of 3 accepted")
	}
}

// TestRowScannerRetries: NOT_LEADER is retried, a leader move mid-scan is
// followed and the scan resumes where it was; other errors are returned.
func TestRowScannerRetries(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "kv", kvSchema, 1, 2)
	upsertIDs(t, tbl, 0, 50)
	s, err := tbl.NewRowScanner(0, RowScannerOptions{PageRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := guardCtx(t)
	fc.leaderProxy(tbl, 0).FailCalls(testcluster.RPCScanRows, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1)
	var ids []int64
	next := func() error {
		page, err := s.Next(ctx)
		for _, row := range page {
			ids = append(ids, rowID(tbl, row))
		}
		return err
	}
	if err := next(); err != nil {
		t.Fatalf("page after NOT_LEADER: %v", err)
	}
	leader := fc.moveLeader(tbl, 0)
	for {
		err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after the leader moved: %v", err)
		}
	}
	if len(ids) != 50 {
		t.Fatalf("%d rows scanned across the move, want 50", len(ids))
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("row %d scanned twice", id)
		}
		seen[id] = true
	}
	if leader.Proxy().Calls(testcluster.RPCScanRows) == 0 {
		t.Fatal("the new leader served no page")
	}
	s, _ = tbl.NewRowScanner(0, RowScannerOptions{})
	leader.Proxy().FailCalls(testcluster.RPCScanRows, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, 1)
	if _, err := s.Next(ctx); !errors.Is(err, transport.ErrInvalidRequest) {
		t.Fatalf("INVALID_REQUEST: %v", err)
	}
}

// TestScanRowsRefusals: what the server answers a ScanRows it cannot serve:
// a node without the bucket's replica, a log table, a resume key longer than
// any key, a dropped table.
func TestScanRowsRefusals(t *testing.T) {
	fc, c := startCluster(t)
	kv := openKVTable(t, fc, c, "kv", kvSchema, 1)
	log := openTable(t, fc, c, "log", 1)
	ctx := guardCtx(t)
	call := func(tbl *Table, node *testcluster.Node, req *pb.ScanRowsRequest) error {
		req.TableId = tbl.ID()
		_, err := tbl.tablet(node.Addr()).ScanRows(ctx, req)
		return err
	}
	leader := fc.leader(kv, 0)
	var other *testcluster.Node
	for _, n := range fc.Nodes() {
		if n.ID != leader.ID {
			other = n
		}
	}
	for _, tc := range []struct {
		name string
		tbl  *Table
		node *testcluster.Node
		req  *pb.ScanRowsRequest
		want error
	}{
		{"not the leader", kv, other, &pb.ScanRowsRequest{}, transport.ErrNotLeader},
		{"log table", log, fc.leader(log, 0), &pb.ScanRowsRequest{}, transport.ErrInvalidRequest},
		{"key too long", kv, leader, &pb.ScanRowsRequest{AfterKey: make([]byte, 8193)}, transport.ErrInvalidRequest},
	} {
		if err := call(tc.tbl, tc.node, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := c.Admin().DropTable(ctx, fc.db, "kv"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "UNKNOWN_TABLE from the dropped table's leader", func() bool {
		return errors.Is(call(kv, leader, &pb.ScanRowsRequest{}), transport.ErrUnknownTable)
	})
}
