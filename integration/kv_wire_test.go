package integration

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvWireSchema is the schema of the wire-level KV tests' table.
const kvWireSchema = "id BIGINT NOT NULL, name STRING, v BIGINT"

// kvRow is one row of kvWireSchema; a nil name or v is null.
type kvRow struct {
	id   int64
	name *string
	v    *int64
}

func str(s string) *string { return &s }
func i64(v int64) *int64   { return &v }

func encodeKVRow(t testing.TB, r kvRow) []byte {
	t.Helper()
	s, err := record.ParseSchema(kvWireSchema)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	enc.SetInt64(0, r.id)
	if r.name != nil {
		enc.SetString(1, *r.name)
	}
	if r.v != nil {
		enc.SetInt64(2, *r.v)
	}
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// kvBatch builds a PutKv batch of raw records.
func kvBatch(t testing.TB, opts record.BatchOptions, changes []record.ChangeType, rows [][]byte) []byte {
	t.Helper()
	opts.Format = record.PayloadRows
	b := record.NewBatchBuilder(opts, 0)
	for i, row := range rows {
		if err := b.Append(changes[i], row); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func upserts(t testing.TB, rows ...kvRow) []byte {
	t.Helper()
	var enc [][]byte
	var ch []record.ChangeType
	for _, r := range rows {
		enc = append(enc, encodeKVRow(t, r))
		ch = append(ch, record.UpdateAfter)
	}
	return kvBatch(t, record.BatchOptions{SchemaID: 1}, ch, enc)
}

// keyOf encodes the primary key of kvWireSchema.
func keyOf(t testing.TB, id int64) []byte {
	t.Helper()
	s, err := record.ParseSchema("id BIGINT NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := record.NewRowEncoder(s)
	enc.SetInt64(0, id)
	k, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// wireCode returns the wire error code of err, or -1.
func wireCode(err error) pb.ErrorCode {
	var we *transport.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return -1
}

// readChangelog fetches bucket 0's committed changelog from offset 0 and
// calls fn for each record, skipping control batches.
func readChangelog(t testing.TB, ctx context.Context, tablet pb.DRPCTabletClient, tableID uint64, fn func(rec record.Record)) {
	t.Helper()
	for offset := int64(0); ; {
		r, err := tablet.Fetch(ctx, &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: tableID, Offset: offset, LeaderEpoch: -1, LastFetchedEpoch: -1}}, MaxWaitMs: 10})
		if err != nil {
			t.Fatal(err)
		}
		fb := r.Buckets[0]
		if fb.Error != "" {
			t.Fatal(fb.Error)
		}
		if len(fb.Records) == 0 {
			return
		}
		it := record.NewBatchIterator(fb.Records, true)
		for it.Next() {
			b := it.Batch()
			offset = b.NextOffset()
			if b.PayloadFormat() == record.PayloadControl {
				continue
			}
			recs, _, err := b.Records(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for recs.Next() {
				fn(recs.Record())
			}
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// changelogOf returns bucket 0's committed changelog as "+I {json}" lines.
func changelogOf(t testing.TB, ctx context.Context, tablet pb.DRPCTabletClient, tableID uint64) []string {
	t.Helper()
	s, _ := record.ParseSchema(kvWireSchema)
	var out []string
	readChangelog(t, ctx, tablet, tableID, func(rec record.Record) {
		js, err := record.AppendRowJSON(nil, s, rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Change.String()+" "+string(js))
	})
	return out
}

// TestKVWire drives a primary-key table at the protocol level: upserts,
// partial updates and deletes produce the right changelog and lookups;
// idempotent retries are answered as duplicates; bad input gets a clear
// typed error and changes nothing.
func TestKVWire(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []client.TableSpec{
		{Database: "w", Name: "kv", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3},
		{Database: "w", Name: "log", Schema: kvWireSchema, Buckets: 1, Replication: 3},
		{Database: "w", Name: "skv", Schema: "k STRING NOT NULL, v STRING", PrimaryKey: []string{"k"}, Buckets: 1, Replication: 3},
		{Database: "w", Name: "first", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3,
			Properties: map[string]string{"merge-engine": "first_row", "delete.behavior": "disable"}},
		{Database: "w", Name: "ver", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3,
			Properties: map[string]string{"merge-engine": "versioned", "merge-engine.version-column": "v", "changelog.image": "wal"}},
	} {
		if _, err := cl.Admin().CreateTable(ctx, spec); err != nil {
			t.Fatalf("create %s: %v", spec.Name, err)
		}
	}
	for _, bad := range []client.TableSpec{
		{Database: "w", Name: "b1", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Properties: map[string]string{"merge-engine": "newest"}},
		{Database: "w", Name: "b2", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Properties: map[string]string{"merge-engine": "versioned"}},
		{Database: "w", Name: "b3", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Properties: map[string]string{"merge-engine": "versioned", "merge-engine.version-column": "name"}},
		{Database: "w", Name: "b4", Schema: kvWireSchema, Properties: map[string]string{"delete.behavior": "ignore"}},
		{Database: "w", Name: "b5", Schema: kvWireSchema, PrimaryKey: []string{"id"}, Properties: map[string]string{"changelog.image": "some"}},
	} {
		if _, err := cl.Admin().CreateTable(ctx, bad); wireCode(err) != pb.ErrorCode_ERROR_CODE_INVALID_REQUEST {
			t.Errorf("create %s with %v: %v, want INVALID_REQUEST", bad.Name, bad.Properties, err)
		}
	}
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	tabletOf := func(name string) (uint64, pb.DRPCTabletClient) {
		id, addr := bucketLeader(t, ctx, c, "w", name, 0)
		return id, pb.NewDRPCTabletClient(pool.Conn(addr))
	}
	kvID, tablet := tabletOf("kv")
	put := func(tableID uint64, batch []byte, targets ...int32) (*pb.ProduceResponse, error) {
		return tablet.PutKv(ctx, &pb.PutKvRequest{TableId: tableID, Acks: -1, Batch: batch, TargetColumns: targets})
	}
	waitFor(t, 20*time.Second, "the leader to take an upsert", func() bool {
		_, err := put(kvID, upserts(t, kvRow{1, str("a"), i64(10)}, kvRow{2, str("b"), i64(20)}, kvRow{3, str("c"), nil}))
		return err == nil
	})
	lookup := func(tableID uint64, linearizable bool, ids ...int64) []string {
		t.Helper()
		var keys [][]byte
		for _, id := range ids {
			keys = append(keys, keyOf(t, id))
		}
		resp, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: tableID, Keys: keys, Linearizable: linearizable})
		if err != nil {
			t.Fatalf("lookup %v: %v", ids, err)
		}
		s, _ := record.ParseSchema(kvWireSchema)
		var out []string
		for _, row := range unpackRows(resp) {
			if len(row) == 0 {
				out = append(out, "")
				continue
			}
			js, err := record.AppendRowJSON(nil, s, row)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(js))
		}
		return out
	}
	expect := func(got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	expect(lookup(kvID, false, 1, 2, 3, 4), `{"id":1,"name":"a","v":10}`, `{"id":2,"name":"b","v":20}`, `{"id":3,"name":"c","v":null}`, "")

	// An update, a partial update (name only), a delete, a delete of an
	// absent key, and an upsert of the same key twice in one batch.
	if _, err := put(kvID, upserts(t, kvRow{1, str("A"), i64(11)})); err != nil {
		t.Fatal(err)
	}
	if _, err := put(kvID, upserts(t, kvRow{3, str("C"), nil}), 0, 1); err != nil {
		t.Fatal(err)
	}
	del := kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.Delete, record.Delete},
		[][]byte{encodeKVRow(t, kvRow{id: 2}), encodeKVRow(t, kvRow{id: 99})})
	if _, err := put(kvID, del); err != nil {
		t.Fatal(err)
	}
	if _, err := put(kvID, upserts(t, kvRow{4, str("x"), i64(1)}, kvRow{4, str("y"), i64(2)})); err != nil {
		t.Fatal(err)
	}
	expect(lookup(kvID, true, 1, 2, 3, 4), `{"id":1,"name":"A","v":11}`, "", `{"id":3,"name":"C","v":null}`, `{"id":4,"name":"y","v":2}`)
	expect(changelogOf(t, ctx, tablet, kvID),
		`+I {"id":1,"name":"a","v":10}`, `+I {"id":2,"name":"b","v":20}`, `+I {"id":3,"name":"c","v":null}`,
		`-U {"id":1,"name":"a","v":10}`, `+U {"id":1,"name":"A","v":11}`,
		`-U {"id":3,"name":"c","v":null}`, `+U {"id":3,"name":"C","v":null}`,
		`-D {"id":2,"name":"b","v":20}`,
		`+I {"id":4,"name":"x","v":1}`, `-U {"id":4,"name":"x","v":1}`, `+U {"id":4,"name":"y","v":2}`)

	// Idempotence: a retried batch is answered with its first offsets.
	idem := kvBatch(t, record.BatchOptions{SchemaID: 1, HasWriter: true, WriterID: 77, Sequence: 0},
		[]record.ChangeType{record.UpdateAfter}, [][]byte{encodeKVRow(t, kvRow{5, str("e"), i64(5)})})
	first, err := put(kvID, idem)
	if err != nil {
		t.Fatal(err)
	}
	again, err := put(kvID, idem)
	if err != nil || !again.Duplicate || again.BaseOffset != first.BaseOffset {
		t.Fatalf("retry: %+v %v, first %+v", again, err, first)
	}
	// A batch that changes nothing still takes its sequence.
	noop := kvBatch(t, record.BatchOptions{SchemaID: 1, HasWriter: true, WriterID: 77, Sequence: 1},
		[]record.ChangeType{record.Delete}, [][]byte{encodeKVRow(t, kvRow{id: 1000})})
	if _, err := put(kvID, noop); err != nil {
		t.Fatal(err)
	}
	if r, err := put(kvID, noop); err != nil || !r.Duplicate {
		t.Fatalf("retry of a no-op batch: %+v %v", r, err)
	}
	before := changelogOf(t, ctx, tablet, kvID)

	// Bad input.
	big := strings.Repeat("x", 1<<20)
	logID, _ := tabletOf("log")
	skvID, skv := tabletOf("skv")
	sSchema, _ := record.ParseSchema("k STRING NOT NULL, v STRING")
	sRow := func(k, v string) []byte {
		enc, _ := record.NewRowEncoder(sSchema)
		enc.SetString(0, k)
		enc.SetString(1, v)
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	nullKeyRow := func() []byte { // a row whose key column is null: built under a nullable schema
		s, _ := record.ParseSchema("id BIGINT, name STRING, v BIGINT")
		enc, _ := record.NewRowEncoder(s)
		enc.SetString(1, "no key")
		row, _ := enc.Finish(nil)
		return row
	}()
	nullKey := kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.UpdateAfter}, [][]byte{nullKeyRow})
	for _, tc := range []struct {
		name string
		call func() error
		want pb.ErrorCode
	}{
		{"null key", func() error { _, err := put(kvID, nullKey); return err }, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"delete with a null key", func() error {
			_, err := put(kvID, kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.Delete}, [][]byte{nullKeyRow}))
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"missing key column", func() error {
			_, err := put(kvID, kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.UpdateAfter}, [][]byte{sRow("k", "v")}))
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"key over the limit", func() error {
			_, err := skv.PutKv(ctx, &pb.PutKvRequest{TableId: skvID, Acks: -1,
				Batch: kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.UpdateAfter}, [][]byte{sRow(strings.Repeat("k", 5000), "v")})})
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"value over the limit", func() error {
			_, err := put(kvID, upserts(t, kvRow{1, &big, i64(0)}))
			return err
		}, pb.ErrorCode_ERROR_CODE_TOO_LARGE},
		{"upsert into a log table", func() error {
			_, err := put(logID, upserts(t, kvRow{1, str("a"), i64(1)}))
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"lookup in a log table", func() error {
			_, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: logID, Keys: [][]byte{keyOf(t, 1)}})
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"append to a primary-key table", func() error {
			_, err := tablet.Produce(ctx, &pb.ProduceRequest{TableId: kvID, Acks: -1, Batch: rowBatch(t, 1, 0, 1, "a")})
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"append-only batch", func() error {
			_, err := put(kvID, rowBatch(t, 1, 0, 1, "a"))
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"schema id the table does not have", func() error {
			_, err := put(kvID, kvBatch(t, record.BatchOptions{SchemaID: 7}, []record.ChangeType{record.UpdateAfter}, [][]byte{encodeKVRow(t, kvRow{id: 1})}))
			return err
		}, pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA},
		{"insert change type", func() error {
			_, err := put(kvID, kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.UpdateBefore}, [][]byte{encodeKVRow(t, kvRow{id: 1})}))
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"target column out of range", func() error { _, err := put(kvID, upserts(t, kvRow{id: 1}), 0, 9); return err }, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"garbage batch", func() error { _, err := put(kvID, []byte("not a batch")); return err }, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"garbage key", func() error {
			_, err := tablet.Lookup(ctx, &pb.LookupRequest{TableId: kvID, Keys: [][]byte{[]byte("zz")}})
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_RECORD},
		{"prefix lookup without a prefix bucket key", func() error {
			_, err := tablet.PrefixLookup(ctx, &pb.PrefixLookupRequest{TableId: kvID, Prefix: keyOf(t, 1)})
			return err
		}, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"unknown table", func() error { _, err := put(9999, upserts(t, kvRow{id: 1})); return err }, pb.ErrorCode_ERROR_CODE_NOT_LEADER},
	} {
		if err := tc.call(); wireCode(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	expect(changelogOf(t, ctx, tablet, kvID), before...)
	expect(lookup(kvID, true, 1, 2, 3, 4, 5), `{"id":1,"name":"A","v":11}`, "", `{"id":3,"name":"C","v":null}`, `{"id":4,"name":"y","v":2}`, `{"id":5,"name":"e","v":5}`)

	// Merge engines: first_row ignores later upserts and refuses deletes;
	// versioned keeps the larger version and writes no -U (changelog.image=wal).
	firstID, _ := tabletOf("first")
	verID, _ := tabletOf("ver")
	for _, tc := range []struct {
		table uint64
		rows  []kvRow
	}{
		{firstID, []kvRow{{1, str("first"), i64(1)}}}, {firstID, []kvRow{{1, str("second"), i64(2)}}},
		{verID, []kvRow{{1, str("v5"), i64(5)}}}, {verID, []kvRow{{1, str("v3"), i64(3)}}}, {verID, []kvRow{{1, str("v7"), i64(7)}}},
	} {
		if _, err := tabletFor(t, ctx, c, pool, "w", tc.table).PutKv(ctx, &pb.PutKvRequest{TableId: tc.table, Acks: -1, Batch: upserts(t, tc.rows...)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tabletFor(t, ctx, c, pool, "w", firstID).PutKv(ctx, &pb.PutKvRequest{TableId: firstID, Acks: -1,
		Batch: kvBatch(t, record.BatchOptions{SchemaID: 1}, []record.ChangeType{record.Delete}, [][]byte{encodeKVRow(t, kvRow{id: 1})})}); wireCode(err) != pb.ErrorCode_ERROR_CODE_INVALID_REQUEST {
		t.Errorf("delete under delete.behavior=disable: %v", err)
	}
	tablet = tabletFor(t, ctx, c, pool, "w", firstID)
	expect(lookup(firstID, true, 1), `{"id":1,"name":"first","v":1}`)
	tablet = tabletFor(t, ctx, c, pool, "w", verID)
	expect(lookup(verID, true, 1), `{"id":1,"name":"v7","v":7}`)
	expect(changelogOf(t, ctx, tablet, verID), `+I {"id":1,"name":"v5","v":5}`, `+U {"id":1,"name":"v7","v":7}`)
}

// tabletFor returns a Tablet client of bucket 0's leader of a table, by id.
func tabletFor(t testing.TB, ctx context.Context, c *Cluster, pool *transport.Pool, db string, tableID uint64) pb.DRPCTabletClient {
	t.Helper()
	cl, err := client.Connect(ctx, c.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tables, err := cl.Admin().ListTables(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range tables {
		if id, addr := bucketLeader(t, ctx, c, db, ti.Name, 0); id == tableID {
			return pb.NewDRPCTabletClient(pool.Conn(addr))
		}
	}
	t.Fatalf("no table %d in %s", tableID, db)
	return nil
}

// unpackRows splits a LookupResponse into one row per key, nil when absent.
func unpackRows(resp *pb.LookupResponse) [][]byte {
	rows := make([][]byte, len(resp.RowSizes))
	off := 0
	for i, n := range resp.RowSizes {
		if n > 0 {
			rows[i] = resp.Rows[off : off+int(n)]
			off += int(n)
		}
	}
	return rows
}
