package metastate

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// removeNode is a RemoveNode of node id with the live nodes.
func removeNode(id uint32, live ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_RemoveNode{RemoveNode: &pb.RemoveNode{NodeId: id, LiveNodes: live}}}
}

func TestRemoveReplica(t *testing.T) {
	r := []uint32{1, 2, 3}
	tests := []struct {
		name     string
		b        *pb.BucketRecord
		live     []uint32
		draining []uint32
		want     *pb.BucketRecord
	}{
		// A replica leaving raises the leader epoch, the leader staying
		// or not: its late fetches of the old epoch are fenced.
		{"a follower leaves replicas and ISR", bk(r, 1, r, 4, 9), []uint32{1, 2}, nil, bk([]uint32{1, 2}, 1, []uint32{1, 2}, 5, 10)},
		{"a follower out of the ISR", bk(r, 1, []uint32{1, 2}, 4, 9), []uint32{1, 2}, nil, bk([]uint32{1, 2}, 1, []uint32{1, 2}, 5, 10)},
		{"the leader: the next live ISR member leads", bk(r, 3, r, 4, 9), []uint32{1, 2}, nil, bk([]uint32{1, 2}, 1, []uint32{1, 2}, 5, 10)},
		{"the leader: a dead ISR member is passed over", bk(r, 3, r, 4, 9), []uint32{2}, nil, bk([]uint32{1, 2}, 2, []uint32{1, 2}, 5, 10)},
		{"the leader: a draining member is passed over", bk(r, 3, r, 4, 9), []uint32{1, 2}, []uint32{1}, bk([]uint32{1, 2}, 2, []uint32{1, 2}, 5, 10)},
		{"the leader: no live ISR member, offline with its ISR", bk(r, 3, []uint32{1, 3}, 4, 9), []uint32{2}, nil, bk([]uint32{1, 2}, 0, []uint32{1}, 5, 10)},
		{"an offline bucket stays offline", bk(r, 0, []uint32{1, 3}, 4, 9), []uint32{1, 2}, nil, bk([]uint32{1, 2}, 0, []uint32{1}, 5, 10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := proto.CloneOf(tc.b)
			if !removeReplica(b, 3, goneSet(tc.live...), goneSet(tc.draining...)) || !proto.Equal(b, tc.want) {
				t.Fatalf("%v, want %v", b, tc.want)
			}
			checkBucketInvariants(t, b)
		})
	}
	b := bk([]uint32{1, 2}, 1, []uint32{1, 2}, 1, 1)
	if removeReplica(b, 3, goneSet(1, 2), nil) {
		t.Fatalf("a bucket without the node changed: %v", b)
	}
}

// removeFixture: tablet nodes 1..3, meta-only node 4, table 1 ("db.t")
// with three buckets:
//
//	bucket 0: replicas 1,2,3, led by 3, all in sync
//	bucket 1: replicas 1,2,3, led by 1, ISR 1,3
//	bucket 2: replicas 2,3,1, led by 2, ISR 2
func removeFixture(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(registerNode(4, "", RoleMeta))
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 3, 3 })))
	r := []uint32{1, 2, 3}
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 3, Isr: r, LeaderEpoch: 3, BucketEpoch: 5})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 1, Isr: []uint32{1, 3}, LeaderEpoch: 1, BucketEpoch: 4})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 2, Replicas: []uint32{2, 3, 1}, Leader: 2, Isr: []uint32{2}})
	return h
}

func TestRemoveNode(t *testing.T) {
	h := removeFixture(t)
	live := []uint32{1, 2}

	t.Run("refused", func(t *testing.T) {
		before := rawDump(t, h.s)
		wantRefused(t, h.apply(removeNode(3, 1, 2, 3)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "node 3 is alive", "floe node drain 3")
		wantRefused(t, h.apply(removeNode(9, live...)), pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 9")
		wantRefused(t, h.apply(removeNode(0, live...)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "node id 0")
		wantRefused(t, h.apply(removeNode(3, make([]uint32, maxLiveNodes+1)...)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed")
		// Node 2 is bucket 2's only in-sync replica.
		wantRefused(t, h.apply(removeNode(2, 1, 3)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
			"node 2 holds the only in-sync copy of 1 bucket (db.t bucket 2)", "lose")
		if rawDump(t, h.s) != before {
			t.Fatal("a refused removal changed the state")
		}
	})

	var res *pb.CommandResult
	t.Run("removes the node", func(t *testing.T) {
		res = h.ok(withID("remove", removeNode(3, live...)))
		got := res.GetRemoval()
		if got.GetNode().GetId() != 3 {
			t.Fatalf("removed node %v", got.GetNode())
		}
		want := []*pb.BucketRecord{
			{TableId: 1, Bucket: 0, Replicas: []uint32{1, 2}, Leader: 1, Isr: []uint32{1, 2}, LeaderEpoch: 4, BucketEpoch: 6},
			{TableId: 1, Bucket: 1, Replicas: []uint32{1, 2}, Leader: 1, Isr: []uint32{1}, LeaderEpoch: 2, BucketEpoch: 5},
			{TableId: 1, Bucket: 2, Replicas: []uint32{2, 1}, Leader: 2, Isr: []uint32{2}, LeaderEpoch: 1, BucketEpoch: 1},
		}
		if len(got.GetBuckets()) != len(want) {
			t.Fatalf("buckets %v, want %v", got.GetBuckets(), want)
		}
		for i, w := range want {
			if !proto.Equal(got.GetBuckets()[i], w) {
				t.Errorf("result bucket %d: %v, want %v", i, got.GetBuckets()[i], w)
			}
			if b := h.bucket(1, int32(i)); !proto.Equal(b, w) {
				t.Errorf("stored bucket %d: %v, want %v", i, b, w)
			}
			checkBucketInvariants(t, w)
		}
		if _, err := h.s.Node(3); err == nil {
			t.Fatal("node 3 is still registered")
		}
		u := h.feedAt(h.index)
		if !slices.Equal(u.GetDroppedNodes(), []uint32{3}) || len(u.GetBuckets()) != 3 || len(u.GetNodes()) != 0 {
			t.Errorf("feed %v", u)
		}
		img, err := h.s.Image()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range img.GetNodes() {
			if n.GetId() == 3 {
				t.Fatal("the image still lists node 3")
			}
		}
	})

	t.Run("repeated", func(t *testing.T) {
		before := rawDump(t, h.s)
		if again := h.ok(withID("remove", removeNode(3, live...))); !proto.Equal(again, res) || rawDump(t, h.s) != before {
			t.Fatalf("retry: %v, want %v", again, res)
		}
		// A new removal of the same node finds nothing to remove.
		wantRefused(t, h.apply(removeNode(3, live...)), pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 3 is not registered")
		if rawDump(t, h.s) != before {
			t.Fatal("a second removal changed the state")
		}
	})

	t.Run("a new table is not placed on it", func(t *testing.T) {
		res := h.apply(createTable(ordersTable("db", "u", func(c *pb.CreateTable) { c.Buckets, c.Replication = 1, 3 })))
		wantRefused(t, res, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "replication 3 exceeds the 2 registered tablet nodes")
	})

	t.Run("registering again is a new node", func(t *testing.T) {
		h.ok(registerNode(3, "", RoleTablet))
		for i := range int32(3) {
			if b := h.bucket(1, i); slices.Contains(b.GetReplicas(), 3) {
				t.Fatalf("bucket %d has node 3 back after it registered again: %v", i, b)
			}
		}
	})

	t.Run("a meta-only node", func(t *testing.T) {
		res := h.ok(removeNode(4, live...))
		if res.GetRemoval().GetNode().GetId() != 4 || len(res.GetRemoval().GetBuckets()) != 0 {
			t.Fatalf("result %v", res)
		}
		if _, err := h.s.Node(4); err == nil {
			t.Fatal("node 4 is still registered")
		}
	})
}

// TestRemoveNodeLastReplica: a bucket whose only replica is the node is
// refused even with an empty ISR (its last member was wiped): nothing
// else holds any of its data.
func TestRemoveNodeLastReplica(t *testing.T) {
	h := bucketFixture(t, 2, 2)
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: []uint32{2}})
	wantRefused(t, h.apply(removeNode(2, 1)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "db.t bucket 0")
}

// TestRemovalRefusal: the proposer's check answers what RemoveNode would
// for the data a node holds.
func TestRemovalRefusal(t *testing.T) {
	h := removeFixture(t)
	check := func(id uint32) error {
		return h.s.Read(func(v *View) error { return v.RemovalRefusal(id) })
	}
	err := check(2)
	wantCode(t, err, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS)
	if res := h.apply(removeNode(2, 1, 3)); res.GetError() != err.(*Error).Msg {
		t.Fatalf("the check says %v, the command %q", err, res.GetError())
	}
	for _, id := range []uint32{1, 3, 4, 9} {
		if err := check(id); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
}
