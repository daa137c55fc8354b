package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// createPartitioned creates a partitioned table in the test's database
// and opens it.
func createPartitioned(t *testing.T, fc *testCluster, c *Client, spec TableSpec) *Table {
	t.Helper()
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	spec.Database = fc.db
	if _, err := c.Admin().CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !tbl.Partitioned() || !slices.Equal(tbl.PartitionKeys(), spec.PartitionKeys) {
		t.Fatalf("table partitioned by %v, want %v", tbl.PartitionKeys(), spec.PartitionKeys)
	}
	return tbl
}

// eventRow is a row (dt, id, note) of the events tables.
func eventRow(t *testing.T, tbl *Table, dt string, id int64) []byte {
	t.Helper()
	e := tbl.NewRowEncoder()
	e.SetString(0, dt)
	e.SetInt64(1, id)
	e.SetString(2, fmt.Sprintf("note %d", id))
	row, err := e.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// TestPartitionedLogTable: writers route each row to its partition and
// create the partitions they meet (two writers meeting one new partition
// make one); a scanner of each partition's buckets reads exactly that
// partition's rows, each record naming its partition.
func TestPartitionedLogTable(t *testing.T) {
	fc, c := startCluster(t)
	tbl := createPartitioned(t, fc, c, TableSpec{Name: "events", Schema: "dt STRING NOT NULL, id BIGINT NOT NULL, note STRING",
		Buckets: 2, Replication: 3, PartitionKeys: []string{"dt"}})
	ctx := guardCtx(t)
	days := []string{"2026-12-01", "2026-12-02", "2026-12-03"}
	const perWriter = 150
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			aw := newWriter(t, tbl, AppendWriterOptions{})
			for i := range perWriter {
				id := int64(w*perWriter + i)
				if _, err := aw.Append(ctx, eventRow(t, tbl, days[id%3], id)); err != nil {
					t.Error(err)
					return
				}
			}
			if err := aw.Flush(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	parts, err := tbl.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.Name)
		if p.Origin != "on-write" || p.ID <= tbl.ID() {
			t.Fatalf("partition %+v: want one created on write, with an id above the table's %d", p, tbl.ID())
		}
	}
	if want := []string{"dt=2026-12-01", "dt=2026-12-02", "dt=2026-12-03"}; !slices.Equal(names, want) {
		t.Fatalf("partitions %v, want %v", names, want)
	}
	// Every partition's buckets hold its rows, and only those.
	s := newScanner(t, tbl, LogScannerOptions{})
	if err := s.Subscribe(0, Earliest()); err == nil {
		t.Fatal("a partitioned table's scanner subscribed a bucket of no partition")
	}
	for _, day := range days {
		for b := range tbl.Buckets() {
			if err := s.SubscribePartition(ctx, day, b, Earliest()); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[int64]bool{}
	for _, r := range pollUntil(t, s, 2*perWriter) {
		v := record.NewRowView(tbl.Schema(), r.Row)
		id := v.Int64(1)
		if seen[id] || r.Partition != "dt="+v.String(0) || v.String(0) != days[id%3] {
			t.Fatalf("record %+v: row %d of %s in partition %q (seen before: %v)", r, id, v.String(0), r.Partition, seen[id])
		}
		seen[id] = true
	}
	var read int64
	for b := range tbl.Buckets() {
		pos, ok := s.PartitionPosition("2026-12-02", b)
		if !ok {
			t.Fatalf("dt=2026-12-02 bucket %d has no position", b)
		}
		read += pos
	}
	if read != 2*perWriter/3 {
		t.Fatalf("the positions of dt=2026-12-02 add up to %d, want its %d rows", read, 2*perWriter/3)
	}
	if err := s.SubscribePartition(ctx, "2026-11-30", 0, Earliest()); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("subscribing a partition that does not exist: %v", err)
	}
}

// TestPartitionsNotCreatedOnWrite: with partition.dynamic-create=false a
// row of a missing partition is refused with ErrUnknownPartition, and
// nothing is buffered; once added, the partition takes rows.
func TestPartitionsNotCreatedOnWrite(t *testing.T) {
	fc, c := startCluster(t)
	tbl := createPartitioned(t, fc, c, TableSpec{Name: "events", Schema: "dt STRING NOT NULL, id BIGINT NOT NULL, note STRING",
		Buckets: 1, Replication: 3, PartitionKeys: []string{"dt"}, Properties: map[string]string{"partition.dynamic-create": "false"}})
	ctx := guardCtx(t)
	w := newWriter(t, tbl, AppendWriterOptions{})
	if _, err := w.Append(ctx, eventRow(t, tbl, "2026-12-03", 1)); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("append to a missing partition: %v", err)
	}
	if w.Buffered() != 0 {
		t.Fatalf("%d bytes buffered of a refused row", w.Buffered())
	}
	if _, err := c.Admin().CreatePartition(ctx, fc.db, "events", "dt=2026-12-03"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreatePartition(ctx, fc.db, "events", "dt=2026-12-03"); err == nil {
		t.Fatal("a partition was created twice")
	}
	if _, err := w.Append(ctx, eventRow(t, tbl, "2026-12-03", 2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, eventRow(t, tbl, "bad/value", 3)); err == nil {
		t.Fatal("a partition value with / was taken")
	}
}

// TestPartitionedPrimaryKeyTable: upserts go to the partition of their
// key, lookups find them there, and a key of a partition that does not
// exist has no row.
func TestPartitionedPrimaryKeyTable(t *testing.T) {
	fc, c := startCluster(t)
	tbl := createPartitioned(t, fc, c, TableSpec{Name: "users", Schema: "dt DATE NOT NULL, id BIGINT NOT NULL, note STRING, PRIMARY KEY (dt, id)",
		Buckets: 2, Replication: 3, PartitionKeys: []string{"dt"}})
	if got := tbl.Info().BucketKey; !slices.Equal(got, []string{"id"}) {
		t.Fatalf("bucket key %v: want the primary key without the partition column", got)
	}
	ctx := guardCtx(t)
	w, err := tbl.NewUpsertWriter(UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	row := func(day, id int64) []byte {
		e := tbl.NewRowEncoder()
		e.SetInt64(0, day) // days since 1970-01-01
		e.SetInt64(1, id)
		e.SetString(2, fmt.Sprintf("user %d on %d", id, day))
		r, err := e.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const day = 20_425 // 2025-12-03
	for id := range int64(40) {
		if _, err := w.Upsert(ctx, row(day+id%2, id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	parts, err := tbl.Partitions(ctx)
	if err != nil || len(parts) != 2 || parts[0].Name != "dt=2025-12-03" {
		t.Fatalf("partitions %+v, %v", parts, err)
	}
	l, err := tbl.NewLookuper(LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keyOf := func(day, id int64) []byte {
		k, err := tbl.keys.primary.AppendKey(nil, row(day, id))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	var keys [][]byte
	for id := range int64(40) {
		got, found, err := l.Lookup(ctx, keyOf(day+id%2, id))
		if err != nil || !found || record.NewRowView(tbl.Schema(), got).String(2) != fmt.Sprintf("user %d on %d", id, day+id%2) {
			t.Fatalf("key %d: %x, %v, %v", id, got, found, err)
		}
		keys = append(keys, keyOf(day+id%2, id))
		// The same id in the other day's partition is another key.
		keys = append(keys, keyOf(day+1-id%2, id))
	}
	if _, found, err := l.Lookup(ctx, keyOf(day+7, 1)); err != nil || found {
		t.Fatalf("key of a partition that does not exist: found %v, %v", found, err)
	}
	rows, err := l.LookupBatch(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if (r != nil) != (i%2 == 0) {
			t.Fatalf("batch key %d: row %x", i, r)
		}
	}
}

// TestPartitionHandleWriter: a partition's handle writes that partition
// only: a row of another partition is refused before anything is sent.
func TestPartitionHandleWriter(t *testing.T) {
	fc, c := startCluster(t)
	tbl := createPartitioned(t, fc, c, TableSpec{Name: "events", Schema: "dt STRING NOT NULL, id BIGINT NOT NULL, note STRING",
		Buckets: 1, Replication: 3, PartitionKeys: []string{"dt"}})
	ctx := guardCtx(t)
	if _, err := c.Admin().CreatePartition(ctx, fc.db, "events", "2026-12-03"); err != nil {
		t.Fatal(err)
	}
	p, err := tbl.Partition(ctx, "dt=2026-12-03")
	if err != nil {
		t.Fatal(err)
	}
	if p.PartitionInfo().Name != "dt=2026-12-03" || p.ID() == tbl.ID() || p.TableID() != tbl.ID() {
		t.Fatalf("partition handle: %+v, id %d, table id %d", p.PartitionInfo(), p.ID(), p.TableID())
	}
	w := newWriter(t, p, AppendWriterOptions{})
	if _, err := w.Append(ctx, eventRow(t, p, "2026-12-04", 1)); err == nil || !strings.Contains(err.Error(), "dt=2026-12-04") {
		t.Fatalf("a row of another partition: %v", err)
	}
	if _, err := w.Append(ctx, eventRow(t, p, "2026-12-03", 2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if parts, err := tbl.Partitions(ctx); err != nil || len(parts) != 1 {
		t.Fatalf("partitions %+v, %v: the refused row made one", parts, err)
	}
}
