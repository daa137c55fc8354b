package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// A partitioned log table (id 7) of the partition tests, and its
// partitions: ids from the table id counter, buckets keyed by them.
const (
	partTable    uint64 = 7
	partDec3     uint64 = 8
	partDec4     uint64 = 9
	partDec5     uint64 = 10
	partDec3Name        = "dt=2026-12-03"
)

// partitionedTable is the table's record with schema versions 1 to
// versions: version 1 is (dt, v), each later one adds a nullable column.
func partitionedTable(versions int) *pb.TableRecord {
	t := &pb.TableRecord{Id: partTable, Database: "db", Name: "events", Buckets: 1, Replication: 1, PartitionKeys: []string{"dt"}}
	cols := []*pb.Column{{Name: "dt", Type: "STRING"}, {Name: "v", Type: "STRING", Nullable: true}}
	for id := 1; id <= versions; id++ {
		if id > 1 {
			cols = append(slices.Clone(cols), &pb.Column{Name: fmt.Sprintf("c%d", id), Type: "INT", Nullable: true})
		}
		t.Schemas = append(t.Schemas, &pb.SchemaVersion{Id: int32(id), Columns: cols})
	}
	return t
}

func partitionRecord(id uint64, day int) *pb.PartitionRecord {
	return &pb.PartitionRecord{Id: id, TableId: partTable, Values: []string{fmt.Sprintf("2026-12-%02d", day)},
		Name: fmt.Sprintf("dt=2026-12-%02d", day)}
}

// ledBucket is bucket 0 of a table or partition, led by node 1 alone.
func ledBucket(id uint64) *pb.BucketRecord {
	return &pb.BucketRecord{TableId: id, Bucket: 0, Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1}, Isr: []uint32{1}}
}

// rowBatch is a row-format batch of schema version schemaID holding rows
// (JSON objects of the table's schema of that version).
func rowBatch(t *testing.T, table *pb.TableRecord, schemaID int32, rows ...string) record.Batch {
	t.Helper()
	versions, err := SchemaVersions(table)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(versions, func(v SchemaVersion) bool { return v.ID == schemaID })
	if i < 0 {
		t.Fatalf("no schema version %d", schemaID)
	}
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: int16(schemaID), AppendOnly: true}, 0)
	for _, js := range rows {
		row, err := record.AppendRowFromJSON(nil, versions[i].Schema, []byte(js))
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
	return out
}

func produceTo(m *Manager, id uint64, b record.Batch) error {
	_, err := m.Produce(context.Background(), &pb.ProduceRequest{TableId: id, Bucket: 0, Acks: AcksLeader, Batch: b})
	return err
}

// fetchedRecords counts the records a consumer fetches from bucket 0 of id.
func fetchedRecords(t *testing.T, m *Manager, id uint64) int {
	t.Helper()
	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: id, Bucket: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Buckets) != 1 {
		t.Fatalf("fetch of %d: %d buckets answered", id, len(resp.Buckets))
	}
	if e := resp.Buckets[0].GetError(); e != "" {
		t.Fatalf("fetch of %d: %v %s", id, resp.Buckets[0].GetErrorCode(), e)
	}
	return recordsIn(resp.Buckets[0].Records)
}

// droppedLog records what OnTableDropped was told.
type droppedLog struct {
	mu    sync.Mutex
	names map[uint64]string
}

func (d *droppedLog) note(id uint64, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		d.names = map[uint64]string{}
	}
	d.names[id] = name
}

func (d *droppedLog) take() map[uint64]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.names
	d.names = nil
	return out
}

// TestPartitionsServeWithTheirTablesMetadata: a partition's buckets are
// served under the partition's id with its table's schema and properties,
// one parsed copy of them shared by every partition; an ALTER TABLE
// reaches every partition; a partitioned table has no buckets of its own;
// a partition's traffic counts to its table.
func TestPartitionsServeWithTheirTablesMetadata(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	m.Apply(&pb.MetadataUpdate{Index: 1, Full: true, Tables: []*pb.TableRecord{partitionedTable(1)},
		Partitions: []*pb.PartitionRecord{partitionRecord(partDec3, 3), partitionRecord(partDec4, 4)},
		Buckets:    []*pb.BucketRecord{ledBucket(partDec3), ledBucket(partDec4)}})
	r3, r4 := m.replica(BucketID{TableID: partDec3}), m.replica(BucketID{TableID: partDec4})
	if r3 == nil || r4 == nil {
		t.Fatal("the partitions' replicas were not opened")
	}
	if r3.table().tableMeta != r4.table().tableMeta {
		t.Fatal("the partitions do not share their table's metadata")
	}
	if got := r3.table().name; got != "db.events/"+partDec3Name {
		t.Fatalf("partition's name %q", got)
	}

	if err := produceTo(m, partDec3, rowBatch(t, partitionedTable(1), 1, `{"dt":"2026-12-03","v":"a"}`, `{"dt":"2026-12-03","v":"b"}`)); err != nil {
		t.Fatalf("produce to a partition: %v", err)
	}
	if n := fetchedRecords(t, m, partDec3); n != 2 {
		t.Fatalf("fetched %d records of the partition written, want 2", n)
	}
	if n := fetchedRecords(t, m, partDec4); n != 0 {
		t.Fatalf("fetched %d records of the other partition, want 0", n)
	}
	err := produceTo(m, partTable, rowBatch(t, partitionedTable(1), 1, `{"dt":"2026-12-03","v":"a"}`))
	wantCode(t, "produce to the partitioned table's own id", err, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "partitioned")

	// ALTER TABLE: a new schema version, and a property, on every partition.
	altered := partitionedTable(2)
	altered.Properties = map[string]string{MinInsyncReplicasProperty: "1", tableprop.LogTTL: "1h"}
	m.Apply(&pb.MetadataUpdate{Index: 2, Tables: []*pb.TableRecord{altered}})
	r3, r4 = m.replica(BucketID{TableID: partDec3}), m.replica(BucketID{TableID: partDec4})
	for _, r := range []*Replica{r3, r4} {
		if info := r.table(); info.schemaID != 2 || info.props.LogTTL.Hours() != 1 {
			t.Fatalf("%s after the ALTER: schema %d, log.ttl %v; want 2 and 1h", info.name, info.schemaID, info.props.LogTTL)
		}
	}
	if r3.table().tableMeta != r4.table().tableMeta || r3.table().id != partDec3 || r4.table().id != partDec4 {
		t.Fatal("after the ALTER the partitions do not share one metadata, or lost their ids")
	}
	if err := produceTo(m, partDec4, rowBatch(t, altered, 2, `{"dt":"2026-12-04","v":"c","c2":7}`)); err != nil {
		t.Fatalf("produce a row of the new schema version to a partition: %v", err)
	}
	if n := fetchedRecords(t, m, partDec4); n != 1 {
		t.Fatalf("fetched %d records of the partition written after the ALTER, want 1", n)
	}

	// A partition created after the ALTER gets the altered metadata.
	m.Apply(&pb.MetadataUpdate{Index: 3, Partitions: []*pb.PartitionRecord{partitionRecord(partDec5, 5)},
		Buckets: []*pb.BucketRecord{ledBucket(partDec5)}})
	if r5 := m.replica(BucketID{TableID: partDec5}); r5 == nil || r5.table().tableMeta != r3.table().tableMeta {
		t.Fatal("a new partition's replica is missing or does not share its table's metadata")
	}

	// One series for the table, its partitions' replicas and traffic in it.
	gs := m.TableGauges(time.Now())
	if len(gs) != 1 || gs[0].Name != "db.events" || gs[0].TableID != partTable {
		t.Fatalf("gauges %+v, want the table db.events alone", gs)
	}
	if g := gs[0]; g.Leaders != 3 || g.Traffic.RecordsIn.Load() != 3 || g.Traffic.RecordsOut.Load() != 3 {
		t.Fatalf("gauges %+v (records in %d, out %d), want 3 leaders, 3 records in and 3 out",
			g, g.Traffic.RecordsIn.Load(), g.Traffic.RecordsOut.Load())
	}
}

// TestDroppedPartitionIsDeletedAsATable: a partition dropped (listed
// dropped, absent from a full image, or gone with its table) is a dropped
// table to its replicas: they close and delete their folders, the server
// is told once per partition, by id and name, to delete its remote objects,
// and requests for it are answered as for a dropped table. Its table's
// other partitions, and other tables, stay.
func TestDroppedPartitionIsDeletedAsATable(t *testing.T) {
	dir := t.TempDir()
	var dropped droppedLog
	m := newTestManager(t, dir, func(c *Config) { c.OnTableDropped = dropped.note })
	other := &pb.TableRecord{Id: 11, Database: "db", Name: "plain", Buckets: 1, Replication: 1,
		Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}
	table := partitionedTable(1)
	m.Apply(&pb.MetadataUpdate{Index: 1, Full: true, Tables: []*pb.TableRecord{table, other},
		Partitions: []*pb.PartitionRecord{partitionRecord(partDec3, 3), partitionRecord(partDec4, 4), partitionRecord(partDec5, 5)},
		Buckets:    []*pb.BucketRecord{ledBucket(partDec3), ledBucket(partDec4), ledBucket(partDec5), ledBucket(other.Id)}})
	if err := produceTo(m, partDec3, rowBatch(t, table, 1, `{"dt":"2026-12-03","v":"a"}`)); err != nil {
		t.Fatal(err)
	}
	gone := func(id uint64, name string) {
		t.Helper()
		if m.replica(BucketID{TableID: id}) != nil {
			t.Fatalf("replica of %s still open", name)
		}
		if dirExists(Dir(dir, BucketID{TableID: id})) {
			t.Fatalf("folder of %s's replica still there", name)
		}
		err := produceTo(m, id, rowBatch(t, table, 1, `{"dt":"2026-12-03","v":"a"}`))
		wantCode(t, "produce to "+name, err, pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "dropped")
		if got := dropped.take(); len(got) != 1 || got[id] != "db.events/"+name {
			t.Fatalf("told of dropped %v, want %d (db.events/%s)", got, id, name)
		}
	}
	serving := func(ids ...uint64) {
		t.Helper()
		for _, id := range ids {
			if m.replica(BucketID{TableID: id}) == nil {
				t.Fatalf("replica of %d closed", id)
			}
		}
	}

	m.Apply(&pb.MetadataUpdate{Index: 2, DroppedPartitions: []uint64{partDec3}})
	gone(partDec3, partDec3Name)
	serving(partDec4, partDec5, other.Id)

	// A full image that no longer lists a partition.
	m.Apply(&pb.MetadataUpdate{Index: 3, Full: true, Tables: []*pb.TableRecord{table, other},
		Partitions: []*pb.PartitionRecord{partitionRecord(partDec5, 5)},
		Buckets:    []*pb.BucketRecord{ledBucket(partDec5), ledBucket(other.Id)}})
	gone(partDec4, "dt=2026-12-04")
	serving(partDec5, other.Id)

	// A dropped table takes its partitions, even unlisted.
	m.Apply(&pb.MetadataUpdate{Index: 4, DroppedTables: []uint64{partTable}})
	gone(partDec5, "dt=2026-12-05")
	serving(other.Id)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.partitions)+len(m.partitionsOf) != 0 || m.metas[partTable] != nil || len(m.tables) != 1 {
		t.Fatalf("after the drop the manager keeps partitions %v, of %v, table %v, %d tables",
			m.partitions, m.partitionsOf, m.metas[partTable], len(m.tables))
	}
}

// TestPartitionsOfAnUnusableTable: the partitions of a table whose
// metadata this node cannot use are unusable with it, not dropped; once
// the table's metadata is usable they are served.
func TestPartitionsOfAnUnusableTable(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	bad := partitionedTable(1)
	bad.Properties = map[string]string{MinInsyncReplicasProperty: "abc"}
	image := func(index uint64, table *pb.TableRecord) *pb.MetadataUpdate {
		return &pb.MetadataUpdate{Index: index, Full: true, Tables: []*pb.TableRecord{table},
			Partitions: []*pb.PartitionRecord{partitionRecord(partDec3, 3)}, Buckets: []*pb.BucketRecord{ledBucket(partDec3)}}
	}
	m.Apply(image(1, bad))
	err := produceTo(m, partDec3, rowBatch(t, bad, 1, `{"dt":"2026-12-03","v":"a"}`))
	wantCode(t, "produce to a partition of an unusable table", err, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "unusable")
	if m.replica(BucketID{TableID: partDec3}) != nil {
		t.Fatal("a replica of a partition of an unusable table was opened")
	}
	m.Apply(image(2, partitionedTable(1)))
	if err := produceTo(m, partDec3, rowBatch(t, bad, 1, `{"dt":"2026-12-03","v":"a"}`)); err != nil {
		t.Fatalf("produce once the table is usable: %v", err)
	}
}
