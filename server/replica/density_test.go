package replica

import (
	"runtime"
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// TestReplicasStartNoGoroutines: a node's bucket replicas of a log table
// share the node's goroutines (housekeeping, the log scheduler); opening
// hundreds of them starts none per replica.
func TestReplicasStartNoGoroutines(t *testing.T) {
	const buckets = 200
	m := newTestManager(t, t.TempDir())
	table := &pb.TableRecord{Id: 7, Database: "db", Name: "events", Buckets: buckets, Replication: 1,
		Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}
	u := &pb.MetadataUpdate{Index: 1, Tables: []*pb.TableRecord{table}}
	for b := range int32(buckets) {
		u.Buckets = append(u.Buckets, &pb.BucketRecord{TableId: 7, Bucket: b, Leader: 1, LeaderEpoch: 1,
			BucketEpoch: 1, Replicas: []uint32{1}, Isr: []uint32{1}})
	}
	before := runtime.NumGoroutine()
	m.Apply(u)
	m.mu.Lock()
	opened := len(m.replicas)
	m.mu.Unlock()
	if opened != buckets {
		t.Fatalf("%d replicas open, want %d", opened, buckets)
	}
	if extra := runtime.NumGoroutine() - before; extra > 10 {
		t.Fatalf("%d replicas started %d goroutines", buckets, extra)
	}
}
