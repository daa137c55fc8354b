package replica

import (
	"context"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// noMeta answers no ISR proposal: tests that need the controller drive the
// core through assign instead.
type noMeta struct{}

func (noMeta) AdjustIsr(ctx context.Context, _ *pb.AdjustIsr, _ []byte) (*pb.BucketRecord, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (noMeta) ReportDamaged(ctx context.Context, _ *pb.ReportDamagedReplica, _ []byte) (*pb.BucketRecord, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

type noDialer struct{}

func (noDialer) Tablet(string) pb.DRPCTabletClient { return nil }

// newTestManager starts a manager of node 1 over a fresh folder; opts
// adjust its config.
func newTestManager(t *testing.T, dir string, opts ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{NodeID: 1, Dir: dir, Meta: noMeta{}, Dialer: noDialer{}}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

var testBucket = BucketID{TableID: 7, Bucket: 0}

// openTestReplica opens the replica of a log table's bucket 0 on m.
func openTestReplica(t *testing.T, m *Manager) *Replica {
	t.Helper()
	info, err := newTableInfo(&pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "events", Buckets: 1, Replication: 1,
		Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := openReplica(m, testBucket, info)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lead makes node 1 the bucket's only replica and leader at epoch.
func lead(r *Replica, epoch int32) {
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: epoch,
		BucketEpoch: epoch, Replicas: []uint32{1}, Isr: []uint32{1}}, 0)
}

// produceLeader appends b on the leader with acks=1.
func produceLeader(t *testing.T, r *Replica, b record.Batch) *pb.ProduceResponse {
	t.Helper()
	resp, err := r.produce(context.Background(), nil, b, AcksLeader, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// writerBatchN is a batch of writer's sequence seq holding n records.
func writerBatchN(t *testing.T, writer int64, seq int32, n int, payload string) record.Batch {
	t.Helper()
	b := record.NewBatchBuilder(record.BatchOptions{HasWriter: true, WriterID: writer, Sequence: seq, AppendOnly: true}, 0)
	for range n {
		b.Append(record.AppendOnly, []byte(payload))
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
