package replica

import (
	"testing"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// TestMetricsFollowTheReplica: the event counters and the scrape-time
// gauges say what the leader went through: the epoch it started leading,
// its follower's lag, the ISR shrinking (under-replicated, below min ISR)
// and growing back, and the consumer's read in the table's traffic.
func TestMetricsFollowTheReplica(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.tables[testBucket.TableID] = r.table()
	m.metas[testBucket.TableID] = r.table().tableMeta
	m.mu.Unlock()
	r.core.SetMinISR(2)
	bucket := func(bucketEpoch int32, isr ...uint32) *pb.BucketRecord {
		return &pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 3,
			BucketEpoch: bucketEpoch, Replicas: []uint32{1, 2}, Isr: isr}
	}
	gauges := func() TableGauges {
		t.Helper()
		gs := m.TableGauges(time.Now())
		if len(gs) != 1 || gs[0].Name != "db.events" {
			t.Fatalf("gauges %+v, want one table db.events", gs)
		}
		return gs[0]
	}
	events := func(want Events) {
		t.Helper()
		if got := m.Events(); got != want {
			t.Fatalf("events %+v, want %+v", got, want)
		}
	}

	r.assign(bucket(3, 1, 2), 1)
	events(Events{LeaderElections: 1})
	produceLeader(t, r, writerBatchN(t, 100, 0, 5, "a"))
	if _, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 2, LeaderEpoch: 3, LastFetchedEpoch: 3}}}); err != nil {
		t.Fatal(err)
	}
	if g := gauges(); g.Leaders != 1 || g.UnderReplicated != 0 || g.MaxFollowerLagRecords != 3 || g.LogBytes == 0 {
		t.Fatalf("after the follower fetched from 2 of 5: %+v, want 1 leader, none under-replicated, lag 3, log bytes", g)
	}

	r.assign(bucket(4, 1), 2)
	events(Events{LeaderElections: 1, ISRShrinks: 1})
	if g := gauges(); g.UnderReplicated != 1 || g.BelowMinISR != 1 {
		t.Fatalf("ISR [1] of [1 2], min ISR 2: %+v, want 1 under-replicated and below min ISR", g)
	}
	r.assign(bucket(5, 1, 2), 3)
	events(Events{LeaderElections: 1, ISRShrinks: 1, ISRExpands: 1})

	// A consumer's read counts; the follower's above did not.
	if _, err := m.Fetch(t.Context(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	if g := gauges(); g.Traffic.RecordsOut.Load() != 5 || g.Traffic.BytesOut.Load() == 0 {
		t.Fatalf("after a consumer read 5 records: %d records, %d bytes out", g.Traffic.RecordsOut.Load(), g.Traffic.BytesOut.Load())
	}
}
