package replica

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// recordingMeta hands every ISR change the replica proposes to the test and
// answers none.
type recordingMeta struct{ changes chan *pb.AdjustIsr }

func (m recordingMeta) AdjustIsr(ctx context.Context, change *pb.AdjustIsr, _ []byte) (*pb.BucketRecord, error) {
	m.changes <- change
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m recordingMeta) ReportDamaged(ctx context.Context, _ *pb.ReportDamagedReplica, _ []byte) (*pb.BucketRecord, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestExpansionNamesMemberEpochs: a leader adding a caught-up follower to
// the ISR tells the controller at which node epoch (registration) the
// follower fetched, and its own, so the controller can refuse the change if
// the follower registered again since (KIP-903: a restarted or wiped node's
// old progress does not count).
func TestExpansionNamesMemberEpochs(t *testing.T) {
	meta := recordingMeta{changes: make(chan *pb.AdjustIsr, 10)}
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.Meta = meta })
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	r.setNodeEpoch(7)
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
		BucketEpoch: 3, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 9)
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	_, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, NodeEpoch: 5, Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: r.log.EndOffset(), LeaderEpoch: 3, LastFetchedEpoch: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case change := <-meta.changes:
		if !slices.Equal(change.GetIsr(), []uint32{1, 2}) {
			t.Fatalf("proposed ISR %v, want [1 2]", change.GetIsr())
		}
		got := map[uint32]uint64{}
		for _, e := range change.GetMemberEpochs() {
			got[e.GetNodeId()] = e.GetNodeEpoch()
		}
		if len(got) != 2 || got[1] != 7 || got[2] != 5 {
			t.Fatalf("member epochs %v, want node 1 at 7 (the leader) and node 2 at 5 (its fetch)", change.GetMemberEpochs())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ISR expansion proposed after the follower caught up")
	}
}

// TestMinInsyncChangeAppliesLive: a change of the table's
// min.insync.replicas takes effect on the running replica, from the next
// acks=all write; before, it waited for a restart.
func TestMinInsyncChangeAppliesLive(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	table := func(minISR string) *tableInfo {
		info, err := newTableInfo(&pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "events", Buckets: 1, Replication: 2,
			Properties: map[string]string{MinInsyncReplicasProperty: minISR},
			Schemas:    []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	r.setTable(table("2"))
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 1,
		BucketEpoch: 1, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 0)
	_, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 0, 1, "a"), AcksAll, 5*time.Second)
	var te *transport.Error
	if !errors.As(err, &te) || te.Code != pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS {
		t.Fatalf("acks=all with 1 in-sync replica of 2 required: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	r.setTable(table("1"))
	if _, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 0, 1, "a"), AcksAll, 5*time.Second); err != nil {
		t.Fatalf("acks=all after min.insync.replicas dropped to 1: %v", err)
	}
}
