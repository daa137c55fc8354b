package replica

import (
	"testing"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// TestFollowerWatch: a follower's long poll, served once with nothing to
// return, is served again only once something it asked for moved: a batch
// past its offset, or a role change; a change to the node alone is not
// enough.
func TestFollowerWatch(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	lead(r, 1)
	req := func() *pb.FetchRequest {
		return &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{TableId: testBucket.TableID, Bucket: testBucket.Bucket,
			Offset: r.log.WrittenEnd(), LeaderEpoch: 1}}}
	}
	w := m.watchFollower(req())
	m.notify()
	if w.ready() {
		t.Fatal("a follower's fetch is ready with nothing written past its offset")
	}
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	if !w.ready() {
		t.Fatal("a batch past the follower's offset does not make its fetch ready")
	}

	w = m.watchFollower(req())
	if w.ready() {
		t.Fatal("a fetch at the log end is ready")
	}
	lead(r, 2)
	if !w.ready() {
		t.Fatal("a role change does not make a waiting fetch ready")
	}

	missing := m.watchFollower(&pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{TableId: 99}}})
	if !missing.ready() {
		t.Fatal("a fetch for a bucket this node does not hold is not ready (it has an error to answer)")
	}
}

// TestFollowerLongPollEndsOnItsBucket: a follower's long poll returns the
// batch appended to its bucket while it waits.
func TestFollowerLongPollEndsOnItsBucket(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 1,
		BucketEpoch: 1, Replicas: []uint32{1, 2}, Isr: []uint32{1}}, 0)
	done := make(chan *pb.FetchResponse, 1)
	go func() {
		resp, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, MaxWaitMs: 10_000, MinBytes: 1,
			Buckets: []*pb.FetchBucket{{TableId: testBucket.TableID, Bucket: testBucket.Bucket, LeaderEpoch: 1, LastFetchedEpoch: -1}}})
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	for range 3 {
		m.notify() // changes to the node that are not this bucket's
	}
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	select {
	case resp := <-done:
		if len(resp.Buckets) != 1 || len(resp.Buckets[0].Records) == 0 {
			t.Fatalf("long poll answered %+v, want the batch", resp)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the long poll did not end when its bucket was written")
	}
}
