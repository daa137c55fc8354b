package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedb/floe/internal/testkit/icebergrest"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
)

// waitLake waits until the lake of tbl (by its path in the nodes' remote
// store) holds want rows, and returns its metadata.
func waitLake(t *testing.T, tbl *Table, want int64) *lake.Metadata {
	t.Helper()
	ctx := guardCtx(t)
	lt := lake.NewTable(remoteStore, fmt.Sprintf("lake/%s/%s-%d", tbl.Info().Database, tbl.Info().Name, tbl.TableID()))
	var last string
	for {
		m, _, err := lt.ReadCurrent(ctx)
		if err == nil {
			n, err := lt.Rows(ctx, m)
			if err == nil && n == want {
				return m
			}
			last = fmt.Sprintf("%d rows, %v", n, err)
		} else if !errors.Is(err, tiering.ErrNotFound) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lake never held %d rows (last: %s)", want, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestLakeTiersLogTable: a lake-enabled log table's rows reach its lake,
// whose snapshot records every bucket's offset, within its freshness.
func TestLakeTiersLogTable(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "events", Schema: "id BIGINT NOT NULL, name STRING",
		Buckets: 2, Replication: 1, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, tbl, AppendWriterOptions{})
	appendIDs(t, w, tbl, 0, 100)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m := waitLake(t, tbl, 100)
	offsets, err := lake.ParseLogOffsets(m.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for b := range int32(2) {
		sum += offsets[fmt.Sprintf("%d/%d", tbl.ID(), b)]
	}
	if sum != 100 {
		t.Fatalf("the lake's offsets %v sum to %d, want 100", offsets, sum)
	}
	info, err := c.Admin().DescribeTable(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	var described int64
	for _, b := range info.Placement {
		described += b.LakeOffset
	}
	if l := info.Lake; l == nil || l.Version < 1 || l.Prefix != fmt.Sprintf("lake/%s/events-%d", fc.db, tbl.TableID()) || len(l.Tasks) == 0 || described != 100 {
		t.Fatalf("described lake %+v, buckets' lake offsets summing to %d", info.Lake, described)
	}
}

// TestLakeTiersPartitionedTable: each partition's rows reach the lake
// under its identity partition, and a partition created later joins.
func TestLakeTiersPartitionedTable(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "events", Schema: "id BIGINT NOT NULL, name STRING, region STRING NOT NULL",
		Buckets: 2, Replication: 1, PartitionKeys: []string{"region"},
		Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, tbl, AppendWriterOptions{})
	write := func(from, to int64, region string) {
		for id := from; id < to; id++ {
			e := tbl.NewRowEncoder()
			e.SetInt64(0, id)
			e.SetString(1, fmt.Sprintf("row-%d", id))
			e.SetString(2, region)
			row, err := e.Finish(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 30, "eu")
	write(30, 50, "us")
	waitLake(t, tbl, 50)
	write(50, 60, "ap") // a partition created on write, after the lake's first versions
	m := waitLake(t, tbl, 60)
	if spec := m.Spec(); len(spec.Fields) != 1 || spec.Fields[0].Name != "region" {
		t.Fatalf("partition spec %+v", spec)
	}
}

// TestLakeHoldsLogRetention: log.ttl deletes from a lake-enabled table
// only what its lake holds. Two tables take the same rows with a 1s
// log.ttl and small segments; the lake-enabled one tiers the first rows
// and then waits (datalake.freshness=1h): once the plain table has lost
// the second rows to retention, the lake-enabled one still has every row
// past its lake's offsets.
func TestLakeHoldsLogRetention(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"log.segment.bytes": "64KiB", "log.ttl": "1s"}
	create := func(name string, extra map[string]string) *Table {
		p := map[string]string{}
		for k, v := range props {
			p[k] = v
		}
		for k, v := range extra {
			p[k] = v
		}
		if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: name, Schema: testSchema, Buckets: 1, Replication: 1, Properties: p}); err != nil {
			t.Fatal(err)
		}
		tbl, err := c.Table(ctx, fc.db, name)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	plain := create("plain", nil)
	laked := create("laked", map[string]string{"datalake.enabled": "true", "datalake.freshness": "1h"})
	produceTiered(t, plain, 10)
	produceTiered(t, laked, 10)
	waitLake(t, laked, 10)       // the first round; the next is an hour away
	produceTiered(t, laked, 300) // first: when the plain table's rows expired, these were older
	produceTiered(t, plain, 300)
	earliest := func(tbl *Table) int64 {
		off, err := tbl.ListOffset(ctx, 0, EarliestInLog())
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	for earliest(plain) < 100 {
		select {
		case <-ctx.Done():
			t.Fatalf("the plain table's log.ttl never deleted its first rows (earliest %d)", earliest(plain))
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Now let the lake catch up: the lake-enabled table's log expires too,
	// never past what its lake holds.
	alterLakeFreshness(t, c, fc.db, "laked", "1s")
	lt := lake.NewTable(remoteStore, fmt.Sprintf("lake/%s/laked-%d", fc.db, laked.TableID()))
	for {
		m, _, err := lt.ReadCurrent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		offsets, err := lake.ParseLogOffsets(m.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
		if err != nil {
			t.Fatal(err)
		}
		held := offsets[fmt.Sprintf("%d/0", laked.ID())]
		got := earliest(laked)
		if got > held {
			t.Fatalf("the lake-enabled table's earliest offset is %d; its lake holds records below %d only", got, held)
		}
		if got > 10 {
			return // retention ran, within the lake
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the lake-enabled table's log never expired (earliest %d, lake at %d)", got, held)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func alterLakeFreshness(t *testing.T, c *Client, db, name, freshness string) {
	t.Helper()
	if _, err := c.Admin().AlterTable(guardCtx(t), db, name, AlterTable{Set: map[string]string{"datalake.freshness": freshness}}); err != nil {
		t.Fatal(err)
	}
}

// TestLakeUnionRead: once log.ttl has let go of a lake-enabled table's
// first records (the lake holding them), a scanner from Earliest reads
// them from the lake and goes on in the log at exactly the next offset of
// every bucket: each row once, offsets contiguous, a projection applied
// to both; EarliestInLog starts past them.
func TestLakeUnionRead(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	const buckets = 2
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "union", Schema: testSchema, Buckets: buckets, Replication: 1,
		Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s", "log.segment.bytes": "64KiB", "log.ttl": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "union")
	if err != nil {
		t.Fatal(err)
	}
	produceTiered(t, tbl, 400)
	waitLogIntoLake(t, tbl)
	w := newWriter(t, tbl, AppendWriterOptions{})
	appendIDs(t, w, tbl, 400, 450)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, columns := range [][]string{nil, {"id"}} {
		s, err := tbl.NewLogScanner(LogScannerOptions{Columns: columns})
		if err != nil {
			t.Fatal(err)
		}
		for b := range int32(buckets) {
			if err := s.Subscribe(b, Earliest()); err != nil {
				t.Fatal(err)
			}
		}
		got := pollUntil(t, s, 450)
		seen := map[int64]bool{}
		next := map[int32]int64{}
		for _, r := range got {
			if r.Offset != next[r.Bucket] {
				t.Fatalf("columns %v: bucket %d offset %d, want %d", columns, r.Bucket, r.Offset, next[r.Bucket])
			}
			next[r.Bucket]++
			id := rowID(tbl, r.Row)
			if seen[id] {
				t.Fatalf("columns %v: row %d twice", columns, id)
			}
			seen[id] = true
			if columns == nil {
				if name := record.NewRowView(tbl.schema, r.Row).String(1); id >= 400 && name != fmt.Sprintf("row-%d", id) || id < 400 && !strings.HasPrefix(name, fmt.Sprintf("row-%d-", id)) {
					t.Fatalf("row %d: name %.20q", id, name)
				}
			}
		}
		if len(seen) != 450 {
			t.Fatalf("columns %v: %d distinct rows", columns, len(seen))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// lakeRows reads the current version of a table's lake (by its path in
// the nodes' remote store), data file by data file, as an engine reading
// the files its snapshot lists would: id to name, of a table of
// testSchema.
func lakeRows(t *testing.T, tbl *Table) map[int64]string {
	t.Helper()
	ctx := guardCtx(t)
	lt := lake.NewTable(remoteStore, fmt.Sprintf("lake/%s/%s-%d", tbl.Info().Database, tbl.Info().Name, tbl.TableID()))
	_, n, err := lt.ReadCurrent(ctx)
	if errors.Is(err, tiering.ErrNotFound) {
		return map[int64]string{} // no version yet
	} else if err != nil {
		t.Fatal(err)
	}
	ix, err := lt.ReadIndex(ctx, lt.VersionFile(n), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for b := range tbl.Buckets() {
		files := ix.Files(lake.BucketKey{PhysicalID: tbl.ID(), Bucket: b})
		if len(files) > 1 {
			t.Fatalf("bucket %d has %d data files in the lake", b, len(files))
		}
		for _, f := range files {
			scan, err := lt.OpenScan(ctx, f, ix.Schema, []lake.ScanColumn{
				{FieldID: ix.Schema.Fields[0].ID, Type: arrow.PrimitiveTypes.Int64},
				{FieldID: ix.Schema.Fields[1].ID, Type: arrow.BinaryTypes.String}}, f.From, 1024)
			if err != nil {
				t.Fatal(err)
			}
			for {
				c, err := scan.Next(ctx, 1024)
				if err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				ids, names := c.Columns[0].(*array.Int64), c.Columns[1].(*array.String)
				for i := range c.Rows() {
					if _, dup := out[ids.Value(i)]; dup {
						t.Fatalf("key %d twice in the lake", ids.Value(i))
					}
					out[ids.Value(i)] = names.Value(i)
				}
				c.Release()
			}
			scan.Close()
		}
	}
	return out
}

// TestLakeTiersPrimaryKeyTable: a lake-enabled primary-key table's lake
// holds each key's latest row (copy-on-write, a data file per bucket):
// after inserts, updates and deletes, and after more of them, what the
// lake's files hold is what lookups return.
func TestLakeTiersPrimaryKeyTable(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "users", Schema: testSchema, PrimaryKey: []string{"id"},
		Buckets: 2, Replication: 1, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "users")
	if err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewUpsertWriter(UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	want := map[int64]string{}
	apply := func(from, to int64, name string, deleteEvery int64) {
		t.Helper()
		for id := from; id < to; id++ {
			row := testRow(t, tbl, id, fmt.Sprintf("%s-%d", name, id))
			if deleteEvery > 0 && id%deleteEvery == 0 {
				if _, err := w.Delete(ctx, row); err != nil {
					t.Fatal(err)
				}
				delete(want, id)
				continue
			}
			if _, err := w.Upsert(ctx, row); err != nil {
				t.Fatal(err)
			}
			want[id] = fmt.Sprintf("%s-%d", name, id)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitLakeState := func(stage string) {
		t.Helper()
		for {
			got := lakeRows(t, tbl)
			if maps.Equal(got, want) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the lake holds %d keys, the table %d", stage, len(got), len(want))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	apply(0, 300, "first", 0)
	apply(0, 100, "second", 7) // updates, and deletes of every seventh key
	waitLakeState("after the first changes")
	apply(50, 400, "third", 5) // more updates, deletes, keys deleted before back, new keys
	waitLakeState("after the second changes")
	// What lookups return is what the lake holds.
	checkLookups(t, tbl, 400, want, "the lake")
}

// TestLakeUnionReadPrimaryKey: once a lake-enabled primary-key table's
// changelog has expired below its KV snapshots and its lake, a reader
// from Earliest gets each key's row as of the lake's version, as +I
// records at their keys' latest changes, then the changelog from there:
// the view it materializes is what lookups return.
func TestLakeUnionReadPrimaryKey(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	const buckets = 2
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "accounts", Schema: testSchema, PrimaryKey: []string{"id"},
		Buckets: buckets, Replication: 1, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s",
			"log.ttl": "1s", "log.segment.bytes": "64KiB", "kv.snapshot.interval": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "accounts")
	if err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewUpsertWriter(UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	pad := strings.Repeat("x", 700)
	for round := range 4 {
		for id := range int64(300) {
			row := testRow(t, tbl, id, fmt.Sprintf("r%d-%d-%s", round, id, pad))
			if round > 0 && id%(7+int64(round)) == 0 {
				if _, err := w.Delete(ctx, row); err != nil {
					t.Fatal(err)
				}
			} else if _, err := w.Upsert(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitLogIntoLake(t, tbl)
	s, err := tbl.NewLogScanner(LogScannerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ends := map[int32]int64{}
	for b := range int32(buckets) {
		if ends[b], err = tbl.ListOffset(ctx, b, Latest()); err != nil {
			t.Fatal(err)
		}
		if err := s.Subscribe(b, Earliest()); err != nil {
			t.Fatal(err)
		}
	}
	view := map[int64]string{}
	inserts := 0
	for len(ends) > 0 {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			id := rowID(tbl, r.Row)
			switch r.Change {
			case record.Insert, record.UpdateAfter:
				view[id] = record.NewRowView(tbl.schema, r.Row).String(1)
				if r.Change == record.Insert {
					inserts++
				}
			case record.Delete:
				delete(view, id)
			}
			if r.Offset+1 >= ends[r.Bucket] {
				delete(ends, r.Bucket)
				s.Unsubscribe(r.Bucket)
			}
		}
	}
	checkLookups(t, tbl, 300, view, "the view read from the start")
	if inserts == 0 {
		t.Fatal("no +I read: the lake's rows never came")
	}
}

// waitLogIntoLake waits until every bucket's log has let its first
// records go, the lake holding them: the log starts past 0, and Earliest
// is 0 (the lake's first record).
func waitLogIntoLake(t *testing.T, tbl *Table) {
	t.Helper()
	ctx := guardCtx(t)
	for b := range tbl.Buckets() {
		for {
			inLog, err := tbl.ListOffset(ctx, b, EarliestInLog())
			if err != nil {
				t.Fatal(err)
			}
			first, err := tbl.ListOffset(ctx, b, Earliest())
			if err != nil {
				t.Fatal(err)
			}
			if inLog > 0 && first == 0 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("bucket %d: the log never let records go into the lake (log start %d, earliest %d)", b, inLog, first)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// checkLookups checks that lookups of keys 0 to keys-1 of a primary-key
// table of testSchema find what want (id to name, as seen by what) holds.
func checkLookups(t *testing.T, tbl *Table, keys int64, want map[int64]string, what string) {
	t.Helper()
	ctx := guardCtx(t)
	lk, err := tbl.NewLookuper(LookuperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	for id := range keys {
		row, found, err := lk.Lookup(ctx, keyOf(t, tbl, id))
		if err != nil {
			t.Fatal(err)
		}
		name, held := want[id]
		if found != held || found && record.NewRowView(tbl.schema, row).String(1) != name {
			t.Fatalf("key %d: lookup found %v, %s %v (%.12q)", id, found, what, held, name)
		}
	}
}

// TestLakeRegistersInRESTCatalog: with a REST catalog configured (the
// shared cluster's, a fake of the spec's), a lake table is registered in
// it as DATABASE.TABLE at its first version, and each later version the
// lake commits moves the catalog's main branch to it, with the lake's
// snapshots.
func TestLakeRegistersInRESTCatalog(t *testing.T) {
	fc, c := startCluster(t)
	ctx := guardCtx(t)
	if err := c.Admin().CreateDatabase(ctx, fc.db, IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin().CreateTable(ctx, TableSpec{Database: fc.db, Name: "events", Schema: "id BIGINT NOT NULL, name STRING",
		Buckets: 1, Replication: 1, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(ctx, fc.db, "events")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, tbl, AppendWriterOptions{})
	// inCatalog waits for the catalog's table to be at the lake's version
	// m: its main branch at m's current snapshot, every snapshot of m.
	inCatalog := func(m *lake.Metadata) {
		t.Helper()
		waitFor(t, "the catalog to take the lake's version", func() bool {
			tb := lakeCatalog.Table(fc.db, "events")
			if tb == nil || fmt.Sprint(icebergrest.MainOf(tb.Metadata)) != fmt.Sprint(*m.CurrentSnapshotID) {
				return false
			}
			snaps, _ := tb.Metadata["snapshots"].([]any)
			return len(snaps) == len(m.Snapshots)
		})
	}
	appendIDs(t, w, tbl, 0, 50)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	inCatalog(waitLake(t, tbl, 50))
	commits := lakeCatalog.Commits()
	appendIDs(t, w, tbl, 50, 100)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	inCatalog(waitLake(t, tbl, 100))
	if lakeCatalog.Commits() == commits {
		t.Fatal("the catalog took a later version without a commit")
	}
}
