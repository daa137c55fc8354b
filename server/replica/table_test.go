package replica

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestUnusableTableIsNotDropped: a table whose stored metadata this node
// cannot use (here a min.insync.replicas that is not a positive number,
// stored before create checked properties) gets no replica, and requests for it are answered with the
// reason, not as if the table had been dropped. Once usable metadata comes,
// it is served.
func TestUnusableTableIsNotDropped(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	rec := func(minISR string) *pb.TableRecord {
		return &pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "events", Buckets: 1, Replication: 1,
			Properties: map[string]string{MinInsyncReplicasProperty: minISR},
			Schemas:    []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}
	}
	bucket := &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 1,
		BucketEpoch: 1, Replicas: []uint32{1}, Isr: []uint32{1}}
	produce := func() error {
		_, err := m.Produce(context.Background(), &pb.ProduceRequest{TableId: testBucket.TableID, Bucket: testBucket.Bucket,
			Acks: int32(AcksLeader), Batch: writerBatchN(t, 100, 0, 1, "a")})
		return err
	}

	for _, bad := range []string{"abc", "-1", "0"} {
		m.Apply(&pb.MetadataUpdate{Full: true, Tables: []*pb.TableRecord{rec(bad)}, Buckets: []*pb.BucketRecord{bucket}})
		err := produce()
		var te *transport.Error
		if !errors.As(err, &te) || te.Code != pb.ErrorCode_ERROR_CODE_INVALID_REQUEST ||
			!strings.Contains(err.Error(), "unusable") || !strings.Contains(err.Error(), "min.insync.replicas") ||
			strings.Contains(err.Error(), "dropped") {
			t.Fatalf("produce to a table with min.insync.replicas=%s: %v; want INVALID_REQUEST naming it unusable", bad, err)
		}
		if m.replica(testBucket) != nil {
			t.Fatalf("min.insync.replicas=%s: a replica was opened", bad)
		}
	}

	// Above the replication factor (kept by older builds) it means every
	// replica: the table is served.
	m.Apply(&pb.MetadataUpdate{Full: true, Tables: []*pb.TableRecord{rec("5")}, Buckets: []*pb.BucketRecord{bucket}})
	if r := m.replica(testBucket); r == nil || r.table().minISR != 1 {
		t.Fatal("min.insync.replicas=5 of replication 1: no replica, or not at 1")
	}
	if err := produce(); err != nil && strings.Contains(err.Error(), "unusable") {
		t.Fatalf("produce once the metadata is usable: %v", err)
	}

	m.Apply(&pb.MetadataUpdate{DroppedTables: []uint64{testBucket.TableID}})
	if err := produce(); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("produce after the drop: %v; want dropped", err)
	}
}

func TestLastPerBucket(t *testing.T) {
	rec := func(table uint64, bucket, epoch int32) *pb.BucketRecord {
		return &pb.BucketRecord{TableId: table, Bucket: bucket, LeaderEpoch: epoch}
	}
	in := []*pb.BucketRecord{rec(1, 0, 1), rec(1, 1, 1), rec(1, 0, 2), rec(2, 0, 1)}
	got := lastPerBucket(in)
	want := []*pb.BucketRecord{in[1], in[2], in[3]}
	if !slices.Equal(got, want) {
		t.Fatalf("lastPerBucket = %v, want %v", got, want)
	}
	if unique := in[1:]; !slices.Equal(lastPerBucket(unique), unique) {
		t.Fatal("records of distinct buckets changed")
	}
}

// TestLogTTLOfTablesFromBeforeIt: a table stored before log.ttl existed
// (its record without the checks version that brought it) and not setting
// it gives its replicas' logs no age retention, as it had; a table created
// since retains 7 days by default.
func TestLogTTLOfTablesFromBeforeIt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		checks uint32
		want   time.Duration
	}{
		{"stored before log.ttl", 0, 0},
		{"created since", tableprop.LatestChecks, tableprop.DefaultLogTTL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info, err := newTableInfo(&pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "events", Buckets: 1,
				Replication: 1, Checks: tt.checks,
				Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := logConfig(logstore.Config{}, t.TempDir(), nil, info).RetentionAge; got != tt.want {
				t.Fatalf("log retention age %v, want %v", got, tt.want)
			}
		})
	}
}
