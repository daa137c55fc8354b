package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// wireSchema is the schema of the wire-level tests' table.
const wireSchema = "id BIGINT NOT NULL, v STRING"

// rowBatch builds a log-table batch of n rows (id from first, v = tag).
func rowBatch(t testing.TB, schemaID int16, first, n int, tag string) []byte {
	t.Helper()
	s, err := record.ParseSchema(wireSchema)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := record.NewRowEncoder(s)
	if err != nil {
		t.Fatal(err)
	}
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: schemaID, Format: record.PayloadRows, AppendOnly: true}, 0)
	for i := range n {
		enc.Reset()
		enc.SetInt64(0, int64(first+i))
		enc.SetString(1, tag)
		row, err := enc.Finish(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append(record.AppendOnly, row); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// bucketLeader returns the address of a bucket's leader as the metadata says.
func bucketLeader(t testing.TB, ctx context.Context, c *Cluster, db, table string, bucket int32) (uint64, string) {
	t.Helper()
	cl, err := c.connect(ctx, c.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	desc, err := cl.Admin().DescribeTable(ctx, db, table)
	if err != nil {
		t.Fatal(err)
	}
	leader := desc.Placement[bucket].Leader
	for _, nd := range c.Nodes {
		if nd.ID == leader {
			return desc.ID, nd.Addr
		}
	}
	t.Fatalf("bucket %d has no leader", bucket)
	return 0, ""
}

// TestLogTableWire drives produce and fetch at the protocol level: acks=all
// appends replicate and become visible below the high watermark; bad input
// (corrupt CRC, wrong schema, oversized batch, unknown table) gets a clear
// error, stores nothing and leaves the node serving.
func TestLogTableWire(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--max-batch-bytes", "65536"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "w", Name: "t", Schema: wireSchema, Buckets: 1, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	dropped, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "w", Name: "gone", Schema: wireSchema, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	droppedID := dropped.ID
	if err := cl.Admin().DropTable(ctx, "w", "gone"); err != nil {
		t.Fatal(err)
	}
	tableID, addr := bucketLeader(t, ctx, c, "w", "t", 0)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	tablet := pb.NewDRPCTabletClient(pool.Conn(addr))

	var resp *pb.ProduceResponse
	waitFor(t, 20*time.Second, "the leader to take a write", func() bool {
		var err error
		resp, err = tablet.Produce(ctx, &pb.ProduceRequest{TableId: tableID, Bucket: 0, Acks: -1, Batch: rowBatch(t, 1, 0, 10, "a")})
		return err == nil
	})
	if resp.BaseOffset != 0 || resp.LastOffset != 9 {
		t.Fatalf("first produce: %+v", resp)
	}
	resp, err = tablet.Produce(ctx, &pb.ProduceRequest{TableId: tableID, Bucket: 0, Acks: -1, Batch: rowBatch(t, 1, 10, 5, "b")})
	if err != nil || resp.BaseOffset != 10 {
		t.Fatalf("second produce: %+v %v", resp, err)
	}

	fetch := func(offset int64) *pb.FetchedBucket {
		t.Helper()
		r, err := tablet.Fetch(ctx, &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: tableID, Bucket: 0, Offset: offset, LeaderEpoch: -1, LastFetchedEpoch: -1}}, MaxWaitMs: 100})
		if err != nil {
			t.Fatal(err)
		}
		return r.Buckets[0]
	}
	fb := fetch(0)
	if fb.Error != "" || fb.HighWatermark != 15 {
		t.Fatalf("fetch: hw %d err %q", fb.HighWatermark, fb.Error)
	}
	count := 0
	it := record.NewBatchIterator(fb.Records, true)
	for it.Next() {
		count += int(it.Batch().RecordCount())
	}
	if it.Err() != nil || count != 15 {
		t.Fatalf("fetched %d records: %v", count, it.Err())
	}

	corrupt := rowBatch(t, 1, 100, 3, "x")
	corrupt[len(corrupt)-2] ^= 0x40
	wrongSchema := record.NewBatchBuilder(record.BatchOptions{SchemaID: 1, Format: record.PayloadRows, AppendOnly: true}, 0)
	wrongSchema.Append(record.AppendOnly, []byte("not a row of this table"))
	ws, _ := wrongSchema.Build()
	for _, tc := range []struct {
		name string
		req  *pb.ProduceRequest
		want error
	}{
		{"corrupt crc", &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: corrupt}, transport.ErrInvalidRecord},
		{"wrong schema", &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: bytes.Clone(ws)}, transport.ErrInvalidRecord},
		{"schema id the table does not have", &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: rowBatch(t, 7, 0, 1, "x")}, transport.ErrUnknownSchema},
		{"oversized", &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: rowBatch(t, 1, 0, 100, string(make([]byte, 1000)))}, transport.ErrTooLarge},
		{"dropped table", &pb.ProduceRequest{TableId: droppedID, Acks: -1, Batch: rowBatch(t, 1, 0, 1, "x")}, transport.ErrUnknownTable},
		{"table not yet known", &pb.ProduceRequest{TableId: 999, Acks: -1, Batch: rowBatch(t, 1, 0, 1, "x")}, transport.ErrNotLeader},
		{"garbage", &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: []byte("garbage")}, transport.ErrInvalidRecord},
		{"bad acks", &pb.ProduceRequest{TableId: tableID, Acks: 5, Batch: rowBatch(t, 1, 0, 1, "x")}, transport.ErrInvalidRequest},
	} {
		_, err := tablet.Produce(ctx, tc.req)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	if fb := fetch(0); fb.HighWatermark != 15 || fb.LogEndOffset != 15 {
		t.Fatalf("refused batches changed the log: hw %d end %d", fb.HighWatermark, fb.LogEndOffset)
	}
	// Still serving.
	if _, err := tablet.Produce(ctx, &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: rowBatch(t, 1, 15, 1, "c")}); err != nil {
		t.Fatalf("produce after bad input: %v", err)
	}
	// A consumer fetch past the high watermark is out of range.
	if fb := fetch(1000); !errors.Is(&transport.Error{Code: fb.ErrorCode}, transport.ErrOutOfRange) {
		t.Fatalf("fetch past the end: %v %q", fb.ErrorCode, fb.Error)
	}

	// An idempotent writer's retry after every node restarted is still
	// recognized (writer state from the snapshot taken at shutdown, or from
	// the log) and answered with the original offsets.
	wb := writerBatch(t, 4242, 0)
	first, err := tablet.Produce(ctx, &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: bytes.Clone(wb)})
	if err != nil || first.Duplicate {
		t.Fatalf("idempotent produce: %+v %v", first, err)
	}
	for _, nd := range c.Nodes {
		c.Stop(nd)
	}
	for _, nd := range c.Nodes {
		c.Restart(nd)
	}
	c.WaitLeader(30 * time.Second)
	_, addr = bucketLeader(t, ctx, c, "w", "t", 0)
	tablet = pb.NewDRPCTabletClient(pool.Conn(addr))
	var again *pb.ProduceResponse
	waitFor(t, 30*time.Second, "the bucket leader after the restart", func() bool {
		again, err = tablet.Produce(ctx, &pb.ProduceRequest{TableId: tableID, Acks: -1, Batch: bytes.Clone(wb)})
		if err != nil {
			_, addr = bucketLeader(t, ctx, c, "w", "t", 0)
			tablet = pb.NewDRPCTabletClient(pool.Conn(addr))
		}
		return err == nil
	})
	if !again.Duplicate || again.BaseOffset != first.BaseOffset {
		t.Fatalf("retry after restart: %+v, first answer %+v", again, first)
	}
	_ = fmt.Sprint
}

// writerBatch is a one-row batch of an idempotent writer.
func writerBatch(t testing.TB, writer int64, seq int32) []byte {
	t.Helper()
	s, _ := record.ParseSchema(wireSchema)
	enc, _ := record.NewRowEncoder(s)
	enc.SetInt64(0, writer)
	enc.SetString(1, "idempotent")
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: 1, Format: record.PayloadRows, AppendOnly: true,
		HasWriter: true, WriterID: writer, Sequence: seq}, 0)
	b.Append(record.AppendOnly, row)
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// rowBatchFor builds a one-row batch for a table of logTableSchema.
func rowBatchFor(t testing.TB, tbl *client.Table, id int64, payload string) []byte {
	t.Helper()
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: tbl.SchemaID(), Format: record.PayloadRows, AppendOnly: true}, 0)
	if err := b.Append(record.AppendOnly, encodeRow(t, tbl, id, payload)); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}
