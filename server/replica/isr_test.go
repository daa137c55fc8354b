package replica

import (
	"context"
	"slices"
	"testing"
	"time"

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
