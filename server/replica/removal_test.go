package replica

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// A replica the metadata takes away from this node (a move completed or
// cancelled, a node removed) is closed and its folder deleted; one added
// again later starts from an empty log. A full image deletes the replicas
// it does not list this node a replica of, open or only on disk (a removal
// the node missed while down), and leaves other folders alone.
func TestRemovedReplicasAreDeleted(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, dir)
	table := &pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "events", Buckets: 2, Replication: 2,
		Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}
	bucket := func(b int32, epoch int32, replicas ...uint32) *pb.BucketRecord {
		return &pb.BucketRecord{TableId: testBucket.TableID, Bucket: b, Leader: 1, LeaderEpoch: epoch, BucketEpoch: epoch,
			Replicas: replicas, Isr: []uint32{1}}
	}
	m.Apply(&pb.MetadataUpdate{Index: 1, Full: true, Tables: []*pb.TableRecord{table},
		Buckets: []*pb.BucketRecord{bucket(0, 1, 1, 2), bucket(1, 1, 1, 2)}})
	if m.replica(testBucket) == nil {
		t.Fatal("no replica opened")
	}
	produceLeader(t, m.replica(testBucket), writerBatchN(t, 100, 0, 3, "a"))
	dir0 := Dir(dir, testBucket)
	dir1 := Dir(dir, BucketID{TableID: testBucket.TableID, Bucket: 1})

	// a removal naming another node changes nothing here
	m.Apply(&pb.MetadataUpdate{Index: 2, RemovedReplicas: []*pb.ReplicaRemoval{{TableId: testBucket.TableID, Bucket: 0, Nodes: []uint32{2}}}})
	if m.replica(testBucket) == nil {
		t.Fatal("a removal of node 2 closed node 1's replica")
	}
	// this node's removal deletes the replica
	m.Apply(&pb.MetadataUpdate{Index: 3, RemovedReplicas: []*pb.ReplicaRemoval{{TableId: testBucket.TableID, Bucket: 0, Nodes: []uint32{1}}}})
	if m.replica(testBucket) != nil {
		t.Fatal("the removed replica is still open")
	}
	if _, err := os.Stat(dir0); !os.IsNotExist(err) {
		t.Fatalf("the removed replica's folder: %v", err)
	}
	// added again (a later move): an empty log
	m.Apply(&pb.MetadataUpdate{Index: 4, Buckets: []*pb.BucketRecord{bucket(0, 2, 2, 1)}})
	if r := m.replica(testBucket); r == nil || r.log.EndOffset() != 0 {
		t.Fatalf("the replica added again: %v", r)
	}

	// a folder left by a removal the node did not hear of, and one that
	// is not a replica's
	orphan := Dir(dir, BucketID{TableID: 99, Bucket: 3})
	other := filepath.Join(dir, "t99-b3-keep")
	for _, d := range []string{orphan, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// the full image lists bucket 0 only
	m.Apply(&pb.MetadataUpdate{Index: 5, Full: true, Tables: []*pb.TableRecord{table}, Buckets: []*pb.BucketRecord{bucket(0, 2, 2, 1)}})
	if m.replica(testBucket) == nil {
		t.Fatal("the full image's replica was closed")
	}
	if m.replica(BucketID{TableID: testBucket.TableID, Bucket: 1}) != nil {
		t.Fatal("bucket 1, absent from the full image, is still open")
	}
	for _, d := range []string{dir1, orphan} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("folder %s of a replica the image does not list: %v", d, err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a folder that is no replica's was touched: %v", err)
	}
	if _, err := os.Stat(dir0); err != nil {
		t.Fatalf("the listed replica's folder: %v", err)
	}
}
