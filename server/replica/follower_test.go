package replica

import (
	"context"
	"errors"
	"strings"
	"testing"

	"storj.io/drpc"

	"github.com/floedb/floe/transport/pb"
)

// refusingLeader answers every follower fetch with a per-bucket refusal,
// as a node does that no longer leads the buckets.
type refusingLeader struct {
	pb.DRPCTabletClient
	fetches int
	fail    bool // the next Fetch fails, as when the node restarts
}

func (l *refusingLeader) Fetch(_ context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	l.fetches++
	if l.fail {
		l.fail = false
		return nil, errors.New("connection reset")
	}
	resp := &pb.FetchResponse{}
	for _, b := range req.Buckets {
		resp.Buckets = append(resp.Buckets, &pb.FetchedBucket{TableId: b.TableId, Bucket: b.Bucket,
			Error: "not leader: node 2 is follower (leader: node 3)"})
	}
	return resp, nil
}

func (l *refusingLeader) DRPCConn() drpc.Conn { return nil }

// Fetches: this leader serves single calls only, as a node of an older
// version does; the fetcher falls back to them.
func (l *refusingLeader) Fetches(context.Context) (pb.DRPCTablet_FetchesClient, error) {
	return nil, errors.New(`protocol error: unknown rpc: "/floe.v1.Tablet/Fetches"`)
}

// streamingLeader serves follower fetches on streams, answering each with
// a refusal of every bucket, or failing the stream once failNext is set.
type streamingLeader struct {
	refusingLeader
	streams  []*fakeFetchStream
	failNext bool
}

func (l *streamingLeader) Fetches(ctx context.Context) (pb.DRPCTablet_FetchesClient, error) {
	st := &fakeFetchStream{l: l, ctx: ctx}
	l.streams = append(l.streams, st)
	return st, nil
}

type fakeFetchStream struct {
	drpc.Stream
	l    *streamingLeader
	ctx  context.Context
	reqs []*pb.FetchRequest
}

func (s *fakeFetchStream) Send(req *pb.FetchRequest) error {
	s.reqs = append(s.reqs, req)
	return s.ctx.Err()
}

func (s *fakeFetchStream) Recv() (*pb.FetchResponse, error) {
	if s.l.failNext {
		s.l.failNext = false
		return nil, errors.New("connection reset")
	}
	return s.l.Fetch(s.ctx, s.reqs[len(s.reqs)-1])
}

// TestFetcherKeepsOneStream: a fetcher sends its fetches to a leader node
// on one stream, round after round; a stream that fails is ended and the
// next round opens another; a node that serves no stream gets single
// calls.
func TestFetcherKeepsOneStream(t *testing.T) {
	leader := &streamingLeader{}
	m, r := followerOfNode2(t, leader, []uint32{1, 2})
	f := &fetcher{m: m, leader: 2, ctx: t.Context()}
	for range 3 {
		_ = f.fetchOnce([]*Replica{r}) // refused: an answer, the stream stays
	}
	if len(leader.streams) != 1 || len(leader.streams[0].reqs) != 3 || leader.fetches != 3 {
		t.Fatalf("%d streams opened, %d fetches answered, want one stream carrying 3", len(leader.streams), leader.fetches)
	}
	leader.failNext = true
	if err := f.fetchOnce([]*Replica{r}); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("fetchOnce on a failing stream = %v, want its error", err)
	}
	if leader.streams[0].ctx.Err() == nil {
		t.Fatal("the failed stream was not ended")
	}
	_ = f.fetchOnce([]*Replica{r})
	if len(leader.streams) != 2 || len(leader.streams[1].reqs) != 1 {
		t.Fatalf("%d streams opened after the failure, want a second one carrying the next fetch", len(leader.streams))
	}

	old := &refusingLeader{}
	m, r = followerOfNode2(t, old, []uint32{1, 2})
	f = &fetcher{m: m, leader: 2, ctx: t.Context()}
	for range 2 {
		_ = f.fetchOnce([]*Replica{r})
	}
	if !f.unary || old.fetches != 2 {
		t.Fatalf("unary %v, %d single calls, want the fetcher to fall back to 2 calls", f.unary, old.fetches)
	}
	old.fail = true
	_ = f.fetchOnce([]*Replica{r})
	if f.unary {
		t.Fatal("a failed single call left the fetcher on calls: an upgraded node would never get a stream")
	}
}

type fixedDialer struct{ c pb.DRPCTabletClient }

func (d fixedDialer) Tablet(string) pb.DRPCTabletClient { return d.c }

// followerOfNode2 makes node 1's replica of the test bucket a follower of
// node 2, reached through leader, with the given ISR.
func followerOfNode2(t *testing.T, leader pb.DRPCTabletClient, isr []uint32) (*Manager, *Replica) {
	t.Helper()
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.Dialer = fixedDialer{leader} })
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.nodes[2] = &pb.NodeRecord{Id: 2, RpcAddress: "127.0.0.1:1"}
	m.mu.Unlock()
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 2, LeaderEpoch: 1,
		BucketEpoch: 1, Replicas: []uint32{1, 2}, Isr: isr}, 0)
	return m, r
}

// TestFetchRefusedEverywhereBacksOff: a leader node that refuses every
// bucket of a fetch (it lost leadership and this node has not heard) is a
// failed fetch, so the fetcher backs off; before, it counted as an answer
// and the fetcher asked again at once, thousands of times a second.
func TestFetchRefusedEverywhereBacksOff(t *testing.T) {
	leader := &refusingLeader{}
	m, r := followerOfNode2(t, leader, []uint32{1, 2})
	f := &fetcher{m: m, leader: 2, ctx: t.Context()}
	err := f.fetchOnce([]*Replica{r})
	if err == nil || !strings.Contains(err.Error(), "refused every bucket") {
		t.Fatalf("fetchOnce = %v, want an error saying the leader refused every bucket", err)
	}
	if leader.fetches != 1 {
		t.Fatalf("%d fetches sent, want 1", leader.fetches)
	}
}

// TestFetcherListsFollowersAgainOnRoleChange: a fetcher keeps its list of
// the replicas following its leader between rounds and lists them again
// once a role changed: the replica that moved to another leader leaves
// the list, and one that came back joins it.
func TestFetcherListsFollowersAgainOnRoleChange(t *testing.T) {
	m, r := followerOfNode2(t, &refusingLeader{}, []uint32{1, 2})
	f := &fetcher{m: m, leader: 2, ctx: t.Context()}
	if got := f.following(); len(got) != 1 || got[0] != r {
		t.Fatalf("following = %v, want the replica", got)
	}
	assignTo := func(leader uint32, epoch int32) {
		r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: leader, LeaderEpoch: epoch,
			BucketEpoch: epoch, Replicas: []uint32{1, 2, 3}, Isr: []uint32{1, 2, 3}}, 0)
	}
	assignTo(3, 2)
	if got := f.following(); len(got) != 0 {
		t.Fatalf("following after the bucket moved to node 3 = %v, want none", got)
	}
	assignTo(2, 3)
	if got := f.following(); len(got) != 1 || got[0] != r {
		t.Fatalf("following after the bucket came back to node 2 = %v, want the replica", got)
	}
}
