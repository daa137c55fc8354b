package server_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// partitionCluster is a 3-node cluster tiering to a folder, reached with
// raw RPCs: the partition tests check the server, not the SDK.
type partitionCluster struct {
	t      *testing.T
	c      *testcluster.Cluster
	dir    string // the nodes' data folders: node<id>/tablet/t<id>-b<n>
	remote string // the object store's folder: <cluster>/t<id>/...
	pool   *transport.Pool
}

func startPartitionCluster(t *testing.T, ctx context.Context) *partitionCluster {
	t.Helper()
	pc := &partitionCluster{t: t, dir: t.TempDir(), remote: t.TempDir()}
	store, err := tiering.NewFolder(pc.remote)
	if err != nil {
		t.Fatal(err)
	}
	if pc.c, err = testcluster.Start(ctx, testcluster.Options{Nodes: 3, Dir: pc.dir, Remote: store,
		TieringInterval: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.c.Close() })
	pc.pool = transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { pc.pool.Close() })
	return pc
}

func (pc *partitionCluster) meta() pb.DRPCMetaClient {
	return pb.NewDRPCMetaClient(pc.pool.Conn(pc.c.Addrs()[0]))
}

// createTable creates the database if needed and a partitioned table of
// req, and returns its record.
func (pc *partitionCluster) createTable(ctx context.Context, req *pb.CreateTableRequest) *pb.TableRecord {
	pc.t.Helper()
	if _, err := pc.meta().CreateDatabase(ctx, &pb.CreateDatabaseRequest{Name: req.Database, IfNotExists: true}); err != nil {
		pc.t.Fatal(err)
	}
	resp, err := pc.meta().CreateTable(ctx, req)
	if err != nil {
		pc.t.Fatalf("create table %s.%s: %v", req.Database, req.Name, err)
	}
	return resp.GetResult().GetTable()
}

// createPartition creates a partition and waits until it is served; it
// returns the partition's GetTable answer.
func (pc *partitionCluster) createPartition(ctx context.Context, database, table, partition string) *pb.GetTableResponse {
	pc.t.Helper()
	resp, err := pc.meta().CreatePartition(ctx, &pb.CreatePartitionRequest{Database: database, Name: table, Partition: partition})
	if err != nil {
		pc.t.Fatalf("create partition %s of %s.%s: %v", partition, database, table, err)
	}
	p := resp.GetResult().GetPartition()
	if p.GetId() == 0 || p.GetName() != partition {
		pc.t.Fatalf("created partition %v, want %s with an id", p, partition)
	}
	var tbl *pb.GetTableResponse
	pc.eventually(ctx, "partition "+partition+" served", func() error {
		var err error
		if tbl, err = pc.meta().GetTable(ctx, &pb.GetTableRequest{Database: database, Name: table, Partition: partition}); err != nil {
			return err
		}
		if tbl.GetPartition().GetId() != p.GetId() {
			return fmt.Errorf("GetTable answered partition %v, want id %d", tbl.GetPartition(), p.GetId())
		}
		for _, b := range tbl.Buckets {
			if b.Leader == 0 || len(b.Isr) != len(b.Replicas) {
				return fmt.Errorf("bucket %d: leader %d, ISR %v of %v", b.Bucket, b.Leader, b.Isr, b.Replicas)
			}
			if _, err := pc.leader(tbl, b.Bucket).ListOffsets(ctx, &pb.ListOffsetsRequest{TableId: p.GetId(), Bucket: b.Bucket,
				Spec: pb.OffsetSpec_OFFSET_SPEC_LATEST}); err != nil {
				return err
			}
		}
		return nil
	})
	return tbl
}

// leader is a Tablet client of the leader of a bucket of tbl.
func (pc *partitionCluster) leader(tbl *pb.GetTableResponse, bucket int32) pb.DRPCTabletClient {
	pc.t.Helper()
	for _, b := range tbl.Buckets {
		if b.Bucket != bucket {
			continue
		}
		for _, n := range tbl.Nodes {
			if n.Id == b.Leader {
				return pb.NewDRPCTabletClient(pc.pool.Conn(n.RpcAddress))
			}
		}
	}
	pc.t.Fatalf("no leader known of bucket %d of %v", bucket, tbl.GetPartition())
	return nil
}

// eventually polls cond until it holds, failing the test after a minute.
func (pc *partitionCluster) eventually(ctx context.Context, what string, cond func() error) {
	pc.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	bo := backoff.Backoff{Min: 5 * time.Millisecond, Max: 100 * time.Millisecond}
	for {
		err := cond()
		if err == nil {
			return
		}
		if !bo.Wait(ctx) {
			pc.t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// replicaDirs lists the folders of id's replicas on every node.
func (pc *partitionCluster) replicaDirs(id uint64) []string {
	pc.t.Helper()
	dirs, err := filepath.Glob(filepath.Join(pc.dir, "node*", "tablet", fmt.Sprintf("t%d-b*", id)))
	if err != nil {
		pc.t.Fatal(err)
	}
	return dirs
}

// remoteObjects lists the remote objects of id (remote log and KV
// snapshots) under prefix ("" for all, "kv/" for KV snapshots).
func (pc *partitionCluster) remoteObjects(id uint64, prefix string) []string {
	pc.t.Helper()
	roots, err := filepath.Glob(filepath.Join(pc.remote, "*", fmt.Sprintf("t%d", id)))
	if err != nil {
		pc.t.Fatal(err)
	}
	var out []string
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			// b<n>/log/..., b<n>/manifest/..., b<n>/kv/...
			if parts := strings.SplitN(filepath.ToSlash(rel), "/", 2); len(parts) == 2 && strings.HasPrefix(parts[1], prefix) {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			pc.t.Fatal(err)
		}
	}
	return out
}

// dropPartition drops a partition and waits until its replicas' folders
// are gone from every node and its remote objects from the store.
func (pc *partitionCluster) dropPartition(ctx context.Context, database, table string, p *pb.PartitionRecord) {
	pc.t.Helper()
	if _, err := pc.meta().DropPartition(ctx, &pb.DropPartitionRequest{Database: database, Name: table, Partition: p.GetName()}); err != nil {
		pc.t.Fatalf("drop partition %s: %v", p.GetName(), err)
	}
	pc.eventually(ctx, "the dropped partition's local and remote data deleted", func() error {
		if dirs := pc.replicaDirs(p.GetId()); len(dirs) > 0 {
			return fmt.Errorf("replica folders left: %v", dirs)
		}
		if objs := pc.remoteObjects(p.GetId(), ""); len(objs) > 0 {
			return fmt.Errorf("%d remote objects left, %s first", len(objs), objs[0])
		}
		return nil
	})
}

// schemaVersion is version id of table t.
func schemaVersion(t *testing.T, table *pb.TableRecord, id int32) record.Schema {
	t.Helper()
	versions, err := replica.SchemaVersions(table)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if v.ID == id {
			return v.Schema
		}
	}
	t.Fatalf("table %s has no schema version %d", table.GetName(), id)
	return record.Schema{}
}

// rowsBatch is a batch of schema version schemaID of s holding rows (JSON
// objects), each with change.
func rowsBatch(t *testing.T, s record.Schema, schemaID int32, change record.ChangeType, rows ...string) []byte {
	t.Helper()
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: int16(schemaID), Format: record.PayloadRows,
		AppendOnly: change == record.AppendOnly}, 0)
	for _, js := range rows {
		row, err := record.AppendRowFromJSON(nil, s, []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append(change, row); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fetchAll reads a bucket's committed records from offset 0 and returns
// each record's schema version and row.
func fetchAll(t *testing.T, ctx context.Context, tablet pb.DRPCTabletClient, id uint64, bucket int32) (schemas []int16, rows [][]byte) {
	t.Helper()
	codec, err := record.NewCodec(record.CodecConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer codec.Close()
	for offset := int64(0); ; {
		resp, err := tablet.Fetch(ctx, &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: id, Bucket: bucket, Offset: offset, LeaderEpoch: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		fb := resp.Buckets[0]
		if fb.Error != "" {
			t.Fatalf("fetch %d/%d from %d: %v %s", id, bucket, offset, fb.ErrorCode, fb.Error)
		}
		if len(fb.Records) == 0 {
			return schemas, rows
		}
		for data := fb.Records; len(data) > 0; {
			b, err := record.Check(data)
			if err != nil {
				t.Fatal(err)
			}
			data = data[len(b):]
			it, _, err := b.Records(codec, nil)
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				schemas = append(schemas, b.SchemaID())
				rows = append(rows, append([]byte(nil), it.Record().Data...))
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			offset = b.LastOffset() + 1
		}
	}
}

func wireCode(err error) pb.ErrorCode {
	var we *transport.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return -1
}

// TestPartitions: the buckets of a partitioned table's partitions are
// served under the partitions' ids with the table's schema, an ALTER
// TABLE reaches them, and a dropped partition's local and remote data go
// from every node and the store, while the table's other partitions stay.
func TestPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pc := startPartitionCluster(t, ctx)
	t.Run("log table", func(t *testing.T) { testPartitionedLogTable(t, ctx, pc) })
	t.Run("primary-key table", func(t *testing.T) { testPartitionedKVTable(t, ctx, pc) })
}

func testPartitionedLogTable(t *testing.T, ctx context.Context, pc *partitionCluster) {
	pc.t = t
	const db, name = "parts", "events"
	table := pc.createTable(ctx, &pb.CreateTableRequest{Database: db, Name: name, Schema: "dt STRING NOT NULL, v STRING",
		PartitionKeys: []string{"dt"}, Buckets: 2, Replication: 3,
		// Small segments, so that tiering uploads the sealed ones.
		Properties: map[string]string{"log.segment.bytes": "64KiB"}})
	dec3 := pc.createPartition(ctx, db, name, "dt=2026-12-03")
	dec4 := pc.createPartition(ctx, db, name, "dt=2026-12-04")
	id3, id4 := dec3.GetPartition().GetId(), dec4.GetPartition().GetId()
	if id3 == table.GetId() || id4 == table.GetId() || id3 == id4 {
		t.Fatalf("partition ids %d and %d of table %d", id3, id4, table.GetId())
	}

	// Produce by the partition's id; enough for the first segment to seal.
	v1 := schemaVersion(t, table, 1)
	value := strings.Repeat("x", 1000)
	const batches, perBatch = 4, 30
	for i := range batches {
		var rows []string
		for j := range perBatch {
			rows = append(rows, fmt.Sprintf(`{"dt":"2026-12-03","v":"%d-%d-%s"}`, i, j, value))
		}
		if _, err := pc.leader(dec3, 0).Produce(ctx, &pb.ProduceRequest{TableId: id3, Bucket: 0, Acks: -1,
			Batch: rowsBatch(t, v1, 1, record.AppendOnly, rows...)}); err != nil {
			t.Fatalf("produce to partition %d: %v", id3, err)
		}
	}
	schemas, rows := fetchAll(t, ctx, pc.leader(dec3, 0), id3, 0)
	if len(rows) != batches*perBatch {
		t.Fatalf("fetched %d records of partition dt=2026-12-03, want %d", len(rows), batches*perBatch)
	}
	if js, err := record.AppendRowJSON(nil, v1, rows[0]); err != nil || !strings.Contains(string(js), `"dt":"2026-12-03"`) ||
		schemas[0] != 1 {
		t.Fatalf("first record %s (schema %d, %v)", js, schemas[0], err)
	}
	for b := range int32(2) {
		if _, rows := fetchAll(t, ctx, pc.leader(dec4, b), id4, b); len(rows) != 0 {
			t.Fatalf("partition dt=2026-12-04 bucket %d holds %d records, want none", b, len(rows))
		}
	}

	// ALTER TABLE adds a column; a row of the new version goes to a
	// partition once its leader knows the version.
	if _, err := pc.meta().AlterTable(ctx, &pb.AlterTableRequest{Database: db, Name: name, AddColumns: []string{"n BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	altered, err := pc.meta().GetTable(ctx, &pb.GetTableRequest{Database: db, Name: name, Partition: "dt=2026-12-04"})
	if err != nil {
		t.Fatal(err)
	}
	v2 := schemaVersion(t, altered.GetTable(), 2)
	batch := rowsBatch(t, v2, 2, record.AppendOnly, `{"dt":"2026-12-04","v":"new","n":42}`)
	pc.eventually(ctx, "a row of schema version 2 taken", func() error {
		_, err := pc.leader(altered, 0).Produce(ctx, &pb.ProduceRequest{TableId: id4, Bucket: 0, Acks: -1, Batch: batch})
		if err != nil && wireCode(err) != pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA {
			t.Fatalf("produce a row of schema version 2: %v", err)
		}
		return err
	})
	schemas, rows = fetchAll(t, ctx, pc.leader(altered, 0), id4, 0)
	if len(rows) != 1 || schemas[0] != 2 {
		t.Fatalf("partition dt=2026-12-04 bucket 0: %d records, schemas %v; want 1 of version 2", len(rows), schemas)
	}

	// Tiering uploads the sealed segments of the partition written to.
	pc.eventually(ctx, "the partition's sealed segments tiered", func() error {
		if len(pc.remoteObjects(id3, "log/")) == 0 {
			return errors.New("no remote segment yet")
		}
		return nil
	})
	if len(pc.replicaDirs(id3)) != 2*3 {
		t.Fatalf("replica folders %v, want 2 buckets on 3 nodes", pc.replicaDirs(id3))
	}

	// Operators name a partition's buckets by table and partition.
	st, err := pc.meta().BucketStatus(ctx, &pb.BucketStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]int{}
	for _, b := range st.Buckets {
		if b.Database == db && b.Table == name {
			named[b.Partition]++
		}
	}
	if named["dt=2026-12-03"] != 2 || named["dt=2026-12-04"] != 2 || len(named) != 2 {
		t.Fatalf("bucket status names the table's buckets by partition %v, want 2 of each partition", named)
	}
	_, err = pc.meta().ElectLeaders(ctx, &pb.ElectLeadersRequest{Database: db, Table: name})
	if wireCode(err) != pb.ErrorCode_ERROR_CODE_INVALID_REQUEST {
		t.Fatalf("elect leaders of a partitioned table without a partition: %v; want INVALID_REQUEST", err)
	}
	// Every bucket is led by its preferred leader already: nothing to do.
	_, err = pc.meta().ElectLeaders(ctx, &pb.ElectLeadersRequest{Database: db, Table: name, Partition: "dt=2026-12-04"})
	if err != nil && wireCode(err) != pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS {
		t.Fatalf("elect leaders of a partition: %v", err)
	}

	pc.dropPartition(ctx, db, name, dec3.GetPartition())
	_, err = pc.leader(dec3, 0).Produce(ctx, &pb.ProduceRequest{TableId: id3, Bucket: 0, Acks: -1,
		Batch: rowsBatch(t, v1, 1, record.AppendOnly, `{"dt":"2026-12-03","v":"late"}`)})
	if wireCode(err) != pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE {
		t.Fatalf("produce to the dropped partition: %v; want UNKNOWN_TABLE", err)
	}
	if dirs := pc.replicaDirs(id4); len(dirs) != 2*3 {
		t.Fatalf("the other partition's replica folders %v, want 2 buckets on 3 nodes", dirs)
	}
	if _, rows := fetchAll(t, ctx, pc.leader(altered, 0), id4, 0); len(rows) != 1 {
		t.Fatalf("the other partition holds %d records after the drop, want 1", len(rows))
	}
}

func testPartitionedKVTable(t *testing.T, ctx context.Context, pc *partitionCluster) {
	pc.t = t
	const db, name = "parts", "users"
	table := pc.createTable(ctx, &pb.CreateTableRequest{Database: db, Name: name,
		Schema: "dt STRING NOT NULL, id BIGINT NOT NULL, v STRING", PrimaryKey: []string{"dt", "id"},
		PartitionKeys: []string{"dt"}, Buckets: 1, Replication: 3})
	dec3 := pc.createPartition(ctx, db, name, "dt=2026-12-03")
	dec4 := pc.createPartition(ctx, db, name, "dt=2026-12-04")
	id3 := dec3.GetPartition().GetId()
	s := schemaVersion(t, table, 1)
	keys, err := record.NewKeyEncoder(s, table.GetPrimaryKey())
	if err != nil {
		t.Fatal(err)
	}
	keyOf := func(js string) []byte {
		row, err := record.AppendRowFromJSON(nil, s, []byte(js))
		if err != nil {
			t.Fatal(err)
		}
		k, err := keys.AppendKey(nil, row)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	put := func(tbl *pb.GetTableResponse, rows ...string) {
		t.Helper()
		if _, err := pc.leader(tbl, 0).PutKv(ctx, &pb.PutKvRequest{TableId: tbl.GetPartition().GetId(), Bucket: 0, Acks: -1,
			Batch: rowsBatch(t, s, 1, record.UpdateAfter, rows...)}); err != nil {
			t.Fatalf("put to partition %s: %v", tbl.GetPartition().GetName(), err)
		}
	}
	lookup := func(tbl *pb.GetTableResponse, key []byte) string {
		t.Helper()
		resp, err := pc.leader(tbl, 0).Lookup(ctx, &pb.LookupRequest{TableId: tbl.GetPartition().GetId(), Bucket: 0,
			Keys: [][]byte{key}, Linearizable: true})
		if err != nil {
			t.Fatalf("lookup in partition %s: %v", tbl.GetPartition().GetName(), err)
		}
		if resp.RowSizes[0] == 0 {
			return ""
		}
		js, err := record.AppendRowJSON(nil, s, resp.Rows[:resp.RowSizes[0]])
		if err != nil {
			t.Fatal(err)
		}
		return string(js)
	}

	put(dec3, `{"dt":"2026-12-03","id":1,"v":"a"}`, `{"dt":"2026-12-03","id":2,"v":"b"}`)
	put(dec3, `{"dt":"2026-12-03","id":1,"v":"a2"}`)
	put(dec4, `{"dt":"2026-12-04","id":1,"v":"c"}`)
	if got := lookup(dec3, keyOf(`{"dt":"2026-12-03","id":1}`)); !strings.Contains(got, `"v":"a2"`) {
		t.Fatalf("lookup of id 1 in dt=2026-12-03: %s, want v a2", got)
	}
	if got := lookup(dec4, keyOf(`{"dt":"2026-12-04","id":1}`)); !strings.Contains(got, `"v":"c"`) {
		t.Fatalf("lookup of id 1 in dt=2026-12-04: %s, want v c", got)
	}
	if got := lookup(dec4, keyOf(`{"dt":"2026-12-04","id":2}`)); got != "" {
		t.Fatalf("lookup of id 2 in dt=2026-12-04: %s, want none (it is in the other partition)", got)
	}

	// A KV snapshot of a partition's bucket, committed under the partition.
	snap, err := pc.leader(dec3, 0).SnapshotKV(ctx, &pb.SnapshotKVRequest{TableId: id3, Bucket: 0})
	if err != nil {
		t.Fatalf("KV snapshot of partition dt=2026-12-03: %v", err)
	}
	if snap.GetSnapshot().GetRows() != 2 {
		t.Fatalf("snapshot of %d rows, want 2", snap.GetSnapshot().GetRows())
	}
	if len(pc.remoteObjects(id3, "kv/")) == 0 {
		t.Fatal("no KV snapshot object under the partition's id")
	}

	pc.dropPartition(ctx, db, name, dec3.GetPartition())
	if got := lookup(dec4, keyOf(`{"dt":"2026-12-04","id":1}`)); !strings.Contains(got, `"v":"c"`) {
		t.Fatalf("lookup in the other partition after the drop: %s, want v c", got)
	}
	_, err = pc.leader(dec3, 0).Lookup(ctx, &pb.LookupRequest{TableId: id3, Bucket: 0, Keys: [][]byte{keyOf(`{"dt":"2026-12-03","id":1}`)}})
	if wireCode(err) != pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE {
		t.Fatalf("lookup in the dropped partition: %v; want UNKNOWN_TABLE", err)
	}
}
