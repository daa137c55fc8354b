package metastate

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/floedb/floe/transport/pb"
)

// drainNode is a DrainNode of node id with the live nodes.
func drainNode(id uint32, live ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_DrainNode{DrainNode: &pb.DrainNode{NodeId: id, LiveNodes: live}}}
}

// undrainNode is a DrainNode with cancel.
func undrainNode(id uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_DrainNode{DrainNode: &pb.DrainNode{NodeId: id, Cancel: true}}}
}

func TestDrainBucket(t *testing.T) {
	r := []uint32{1, 2, 3}
	tests := []struct {
		name     string
		b        *pb.BucketRecord
		live     []uint32
		draining []uint32         // other nodes marked draining
		want     *pb.BucketRecord // nil: refused, unchanged
	}{
		{"next replica leads", bk(r, 1, r, 4, 9), r, nil, bk(r, 2, r, 5, 10)},
		{"assignment order decides", bk([]uint32{3, 1, 2}, 1, []uint32{3, 1, 2}, 0, 0), r, nil, bk([]uint32{3, 1, 2}, 3, []uint32{3, 1, 2}, 1, 1)},
		{"a leader in the middle of the order", bk(r, 2, r, 1, 1), r, nil, bk(r, 1, r, 2, 2)},
		{"a replica out of the ISR is skipped", bk(r, 1, []uint32{1, 3}, 4, 9), r, nil, bk(r, 3, []uint32{1, 3}, 5, 10)},
		{"a dead ISR member is skipped, and stays in the ISR", bk(r, 1, r, 2, 2), []uint32{1, 3}, nil, bk(r, 3, r, 3, 3)},
		{"another draining node is passed over", bk(r, 1, r, 2, 2), r, []uint32{2}, bk(r, 3, r, 3, 3)},
		{"another draining node when nothing else may lead", bk(r, 1, r, 2, 2), r, []uint32{2, 3}, bk(r, 2, r, 3, 3)},
		{"the leader need not be live", bk(r, 1, r, 2, 2), []uint32{2, 3}, nil, bk(r, 2, r, 3, 3)},
		{"only member of the ISR", bk(r, 1, []uint32{1}, 2, 2), r, nil, nil},
		{"no other live ISR member", bk(r, 1, []uint32{1, 2}, 2, 2), []uint32{1, 3}, nil, nil},
		{"single replica", bk([]uint32{1}, 1, []uint32{1}, 0, 0), r, nil, nil},
		{"nobody live", bk(r, 1, r, 0, 0), nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := proto.CloneOf(tc.b)
			refusal := drainBucket(b, goneSet(tc.live...), goneSet(tc.draining...))
			if tc.want == nil {
				if refusal == nil || refusal.Code != pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS || !proto.Equal(b, tc.b) {
					t.Fatalf("refusal %v, bucket %v; want NOT_ENOUGH_REPLICAS and no change", refusal, b)
				}
				return
			}
			if refusal != nil || !proto.Equal(b, tc.want) {
				t.Fatalf("refusal %v, %v; want %v", refusal, b, tc.want)
			}
			checkBucketInvariants(t, b)
		})
	}
}

// TestDrainBucketProperties: a drain moves a leadership only to another
// live ISR member, keeps the ISR, raises both epochs by one exactly when
// it moves, and refuses only when no other live ISR member exists.
func TestDrainBucketProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := genBucket(t)
		if old.GetLeader() == 0 {
			return // a drain moves only leaderships
		}
		live := goneSet(rapid.SliceOfDistinct(rapid.Uint32Range(1, 8), rapid.ID[uint32]).Draw(t, "live")...)
		draining := goneSet(rapid.SliceOfDistinct(rapid.Uint32Range(1, 8), rapid.ID[uint32]).Draw(t, "draining")...)
		b := proto.CloneOf(old)
		refusal := drainBucket(b, live, draining)
		other := slices.ContainsFunc(old.GetIsr(), func(r uint32) bool { return r != old.GetLeader() && live(r) })
		if refusal != nil {
			if other || !proto.Equal(b, old) {
				t.Fatalf("refused %v with another live ISR member, or changed: %v -> %v", refusal, old, b)
			}
			return
		}
		l := b.GetLeader()
		switch {
		case !other || l == old.GetLeader() || !live(l) || !slices.Contains(old.GetIsr(), l):
			t.Fatalf("leader %d: not another live ISR member: %v -> %v", l, old, b)
		case !slices.Equal(b.GetIsr(), old.GetIsr()):
			t.Fatalf("ISR changed: %v -> %v", old, b)
		case b.GetLeaderEpoch() != old.GetLeaderEpoch()+1 || b.GetBucketEpoch() != old.GetBucketEpoch()+1:
			t.Fatalf("epochs: %v -> %v", old, b)
		}
		if draining(l) && slices.ContainsFunc(old.GetIsr(), func(r uint32) bool {
			return r != old.GetLeader() && live(r) && !draining(r)
		}) {
			t.Fatalf("chose draining node %d over one that is not: %v -> %v", l, old, b)
		}
		checkBucketInvariants(t, b)
	})
}

// drainFixture: tablet nodes 1..3, meta-only node 4, table 1 ("db.t") with
// three buckets of replicas 1, 2, 3:
//
//	bucket 0: led by 1, everyone in sync: moves to 2
//	bucket 1: led by 1, alone in the ISR: cannot move
//	bucket 2: led by 2: not the drained node's
func drainFixture(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(registerNode(4, "", RoleMeta))
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 3, 3 })))
	r := []uint32{1, 2, 3}
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 1, Isr: r, LeaderEpoch: 3, BucketEpoch: 5})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 1, Isr: []uint32{1}, LeaderEpoch: 1, BucketEpoch: 4})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 2, Replicas: []uint32{2, 3, 1}, Leader: 2, Isr: r})
	return h
}

func TestDrainNode(t *testing.T) {
	h := drainFixture(t)
	r := []uint32{1, 2, 3}

	t.Run("refused", func(t *testing.T) {
		before := rawDump(t, h.s)
		wantRefused(t, h.apply(drainNode(9, r...)), pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 9")
		wantRefused(t, h.apply(drainNode(4, r...)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "node 4", "tablet")
		wantRefused(t, h.apply(drainNode(1, make([]uint32, maxLiveNodes+1)...)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed")
		if rawDump(t, h.s) != before {
			t.Fatal("a refused drain changed the state")
		}
	})

	var res *pb.CommandResult
	t.Run("moves what it can", func(t *testing.T) {
		res = h.ok(withID("drain", drainNode(1, r...)))
		d := res.GetDrain()
		if !d.GetNode().GetDraining() || res.GetUnchanged() {
			t.Fatalf("result %v", res)
		}
		want := []*pb.BucketDrain{
			{Bucket: &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 2, Isr: r, LeaderEpoch: 4, BucketEpoch: 6}, Moved: true},
			{Bucket: &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 1, Isr: []uint32{1}, LeaderEpoch: 1, BucketEpoch: 4},
				Code: pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS},
		}
		got := d.GetBuckets()
		if len(got) != len(want) {
			t.Fatalf("buckets %v, want %v", got, want)
		}
		for i, w := range want {
			e := proto.CloneOf(got[i])
			if (i == 1) != (e.GetError() != "") {
				t.Errorf("bucket %d: error %q", i, e.GetError())
			}
			e.Error = ""
			if !proto.Equal(e, w) {
				t.Errorf("bucket %d: %v, want %v", i, got[i], w)
			}
			if b := h.bucket(1, int32(i)); !proto.Equal(b, w.GetBucket()) {
				t.Errorf("stored bucket %d: %v, want %v", i, b, w.GetBucket())
			}
		}
		wantRefused(t, &pb.CommandResult{Code: got[1].GetCode(), Error: got[1].GetError()},
			pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "bucket 1", "no other live in-sync replica")
		if b := h.bucket(1, 2); b.GetLeader() != 2 || b.GetBucketEpoch() != 0 {
			t.Errorf("a bucket the node does not lead changed: %v", b)
		}
		u := h.feedAt(h.index)
		if len(u.GetNodes()) != 1 || !u.GetNodes()[0].GetDraining() || len(u.GetBuckets()) != 1 || u.GetBuckets()[0].GetBucket() != 0 {
			t.Errorf("feed %v", u)
		}
	})

	t.Run("repeated", func(t *testing.T) {
		before := rawDump(t, h.s)
		if again := h.ok(withID("drain", drainNode(1, r...))); !proto.Equal(again, res) || rawDump(t, h.s) != before {
			t.Fatalf("retry: %v, want %v", again, res)
		}
		// A new drain finds bucket 1 still stuck and changes nothing.
		again := h.ok(drainNode(1, r...))
		if !again.GetUnchanged() || len(again.GetDrain().GetBuckets()) != 1 || again.GetDrain().GetBuckets()[0].GetMoved() ||
			rawDump(t, h.s) != before {
			t.Fatalf("second drain: %v", again)
		}
	})

	t.Run("elections pass the drained node over", func(t *testing.T) {
		// Bucket 0's new leader dies: node 3 leads it, not node 1, which
		// comes first in its assignment order.
		h.ok(fenceNodes(2))
		if b := h.bucket(1, 0); b.GetLeader() != 3 {
			t.Fatalf("bucket 0 after node 2 died: %v, want leader 3, not the drained 1", b)
		}
		// A clean election keeps it there: node 3 is the first live ISR
		// member that is not draining.
		wantRefused(t, h.apply(electLeaders(0, false, 1, 3)), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "node 3")
		// With node 3 gone too, the drained node leads rather than leave
		// the bucket offline.
		h.ok(fenceNodes(2, 3))
		if b := h.bucket(1, 0); b.GetLeader() != 1 {
			t.Fatalf("bucket 0 with only node 1 left: %v, want leader 1", b)
		}
	})

	t.Run("a new table avoids the drained leader", func(t *testing.T) {
		if preferredLeads(t, h, "u") {
			t.Fatal("a bucket of a new table is led by the drained node")
		}
	})

	t.Run("registering again clears the mark", func(t *testing.T) {
		h.ok(registerNode(1, "", RoleTablet))
		n, err := h.s.Node(1)
		if err != nil || n.GetDraining() {
			t.Fatalf("node 1 after it registered again: %v, %v", n, err)
		}
		if !preferredLeads(t, h, "v") {
			t.Fatal("node 1 registered again, yet leads no bucket of a new table that prefers it")
		}
	})
}

// preferredLeads creates table db.name of six buckets over nodes 1..3 and
// reports whether node 1 leads the buckets that prefer it (it comes first
// in their replicas), or none of them; mixed fails the test.
func preferredLeads(t *testing.T, h *harness, name string) bool {
	t.Helper()
	res := h.ok(createTable(ordersTable("db", name, func(c *pb.CreateTable) { c.Buckets, c.Replication = 6, 3 })))
	var leads, not int
	for b := range int32(6) {
		rec := h.bucket(res.GetTable().GetId(), b)
		checkBucketInvariants(t, rec)
		switch {
		case rec.GetReplicas()[0] != 1:
			if rec.GetLeader() != rec.GetReplicas()[0] {
				t.Fatalf("bucket %d not led by its preferred replica: %v", b, rec)
			}
		case rec.GetLeader() == 1:
			leads++
		default:
			if rec.GetLeader() != rec.GetReplicas()[1] {
				t.Fatalf("bucket %d not led by its second replica: %v", b, rec)
			}
			not++
		}
	}
	if leads > 0 == (not > 0) {
		t.Fatalf("node 1 leads %d of the buckets that prefer it, not %d", leads, not)
	}
	return leads > 0
}

func TestUndrainNode(t *testing.T) {
	h := drainFixture(t)
	r := []uint32{1, 2, 3}
	if res := h.ok(undrainNode(1)); !res.GetUnchanged() {
		t.Fatalf("cancel of a node not draining: %v", res)
	}
	h.ok(drainNode(1, r...))
	before := h.bucket(1, 0)
	res := h.ok(undrainNode(1))
	if res.GetUnchanged() || res.GetDrain().GetNode().GetDraining() || len(res.GetDrain().GetBuckets()) != 0 {
		t.Fatalf("cancel: %v", res)
	}
	if n, _ := h.s.Node(1); n.GetDraining() {
		t.Fatalf("node still draining: %v", n)
	}
	if b := h.bucket(1, 0); !proto.Equal(b, before) {
		t.Fatalf("cancel moved a leadership: %v -> %v", before, b)
	}
	// The preferred replica may lead again.
	h.ok(electLeaders(0, false, r...))
	if b := h.bucket(1, 0); b.GetLeader() != 1 {
		t.Fatalf("bucket 0 after cancel and election: %v", b)
	}
}
