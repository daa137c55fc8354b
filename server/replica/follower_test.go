package replica

import (
	"context"
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
}

func (l *refusingLeader) Fetch(_ context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	l.fetches++
	resp := &pb.FetchResponse{}
	for _, b := range req.Buckets {
		resp.Buckets = append(resp.Buckets, &pb.FetchedBucket{TableId: b.TableId, Bucket: b.Bucket,
			Error: "not leader: node 2 is follower (leader: node 3)"})
	}
	return resp, nil
}

func (l *refusingLeader) DRPCConn() drpc.Conn { return nil }

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
