package metastate

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

func TestAdjustIsrRefused(t *testing.T) {
	const (
		fenced  = pb.ErrorCode_ERROR_CODE_FENCED
		invalid = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
		unknown = pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE
	)
	// Bucket 0 of table 1: replicas 2, 1, 3 led by 2 at leader epoch 4 and
	// bucket epoch 7, ISR 2, 3; node 4 is a tablet node but no replica.
	cur := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: []uint32{2, 1, 3}, Leader: 2,
		LeaderEpoch: 4, Isr: []uint32{2, 3}, BucketEpoch: 7}
	req := func(edit func(c *pb.AdjustIsr)) *pb.Command {
		cmd := adjustIsr(cur, 2, 1, 3)
		edit(cmd.GetAdjustIsr())
		return cmd
	}
	tests := []struct {
		name string
		cmd  *pb.Command
		code pb.ErrorCode
		want []string
	}{
		{"unknown table", req(func(c *pb.AdjustIsr) { c.TableId = 9 }), unknown, []string{"table 9", "bucket 0"}},
		{"unknown bucket", req(func(c *pb.AdjustIsr) { c.Bucket = 1 }), unknown, []string{"table 1", "bucket 1"}},
		{"negative bucket", req(func(c *pb.AdjustIsr) { c.Bucket = -1 }), unknown, []string{"bucket -1"}},
		{"wrong leader", req(func(c *pb.AdjustIsr) { c.LeaderId = 3 }), fenced, []string{"node 3 is not the leader", "node 2 is"}},
		{"no leader named", req(func(c *pb.AdjustIsr) { c.LeaderId = 0 }), fenced, []string{"node 0 is not the leader"}},
		{"old leader epoch", req(func(c *pb.AdjustIsr) { c.LeaderEpoch = 3 }), fenced, []string{"leader epoch 3", "current is 4"}},
		{"newer leader epoch", req(func(c *pb.AdjustIsr) { c.LeaderEpoch = 5 }), fenced, []string{"leader epoch 5"}},
		{"old bucket epoch", req(func(c *pb.AdjustIsr) { c.BucketEpoch = 6 }), fenced, []string{"bucket epoch 6", "current is 7"}},
		{"newer bucket epoch", req(func(c *pb.AdjustIsr) { c.BucketEpoch = 8 }), fenced, []string{"bucket epoch 8"}},
		{"fenced before invalid", req(func(c *pb.AdjustIsr) { c.BucketEpoch, c.Isr = 6, nil }), fenced, []string{"bucket epoch 6"}},
		{"ISR without the leader", req(func(c *pb.AdjustIsr) { c.Isr = []uint32{1, 3} }), invalid, []string{"leaves out the leader, node 2"}},
		{"foreign replica", req(func(c *pb.AdjustIsr) { c.Isr = []uint32{2, 4} }), invalid, []string{"node 4", "not an assigned replica"}},
		{"unknown node", req(func(c *pb.AdjustIsr) { c.Isr = []uint32{2, 0} }), invalid, []string{"node 0", "not an assigned replica"}},
		{"duplicate", req(func(c *pb.AdjustIsr) { c.Isr = []uint32{2, 3, 2} }), invalid, []string{"node 2 listed twice"}},
		{"empty", req(func(c *pb.AdjustIsr) { c.Isr = nil }), invalid, []string{"empty ISR"}},
		{"long list", req(func(c *pb.AdjustIsr) { c.Isr = slices.Repeat([]uint32{2}, 100_000) }), invalid, []string{"listed twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := bucketFixture(t, 4, 2, 1, 3)
			setBucket(t, h.s, cur)
			before := rawDump(t, h.s)
			res := h.apply(withID("r", tc.cmd))
			wantRefused(t, res, tc.code, tc.want...)
			if res.GetValue() != nil {
				t.Errorf("refusal carries a value: %v", res)
			}
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
			if u := h.feedAt(h.index); u != nil {
				t.Errorf("feed update %v", u)
			}
			// The refusal is remembered like any result.
			if again := h.apply(withID("r", adjustIsr(cur, 2))); !proto.Equal(again, res) {
				t.Errorf("retry %v, want %v", again, res)
			}
		})
	}
}

func TestAdjustIsrOfflineBucket(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Replicas: []uint32{1, 2, 3}, Leader: 0, LeaderEpoch: 2, Isr: []uint32{1}, BucketEpoch: 3})
	before := rawDump(t, h.s)
	wantRefused(t, h.apply(adjustIsr(h.bucket(1, 0), 1)), pb.ErrorCode_ERROR_CODE_FENCED, "offline")
	if rawDump(t, h.s) != before {
		t.Errorf("state changed")
	}
}

func TestAdjustIsrShrinkAndExpand(t *testing.T) {
	h := bucketFixture(t, 3, 3, 1, 2)
	steps := []struct {
		name      string
		isr       []uint32 // as sent
		want      []uint32 // as stored: assignment order
		epoch     int32
		unchanged bool
	}{
		{"shrink to the leader", []uint32{3}, []uint32{3}, 1, false},
		{"expand out of order", []uint32{2, 3}, []uint32{3, 2}, 2, false},
		{"the same set in another order", []uint32{2, 3}, []uint32{3, 2}, 2, true},
		{"expand to all", []uint32{1, 2, 3}, []uint32{3, 1, 2}, 3, false},
		{"shrink by one", []uint32{3, 1}, []uint32{3, 1}, 4, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			cur := h.bucket(1, 0)
			res := h.ok(adjustIsr(cur, st.isr...))
			got := res.GetBucket()
			want := proto.CloneOf(cur)
			want.Isr, want.BucketEpoch = st.want, st.epoch
			if !proto.Equal(got, want) {
				t.Errorf("result %v, want %v", got, want)
			}
			if stored := h.bucket(1, 0); !proto.Equal(stored, want) {
				t.Errorf("stored %v, want %v", stored, want)
			}
			if res.GetUnchanged() != st.unchanged {
				t.Errorf("unchanged %v, want %v", res.GetUnchanged(), st.unchanged)
			}
			u := h.feedAt(h.index)
			switch {
			case st.unchanged && u != nil:
				t.Errorf("feed update for no change: %v", u)
			case !st.unchanged && (u == nil || len(u.GetBuckets()) != 1 || !proto.Equal(u.GetBuckets()[0], want) ||
				len(u.GetNodes())+len(u.GetTables())+len(u.GetDroppedTables()) != 0):
				t.Errorf("feed update %v, want bucket %v", u, want)
			}
			if got.GetLeader() != 3 || got.GetLeaderEpoch() != 0 {
				t.Errorf("leader changed: %v", got)
			}
		})
	}
	// The epoch a leader knew before the last change is now stale.
	stale := adjustIsr(h.bucket(1, 0), 3)
	stale.GetAdjustIsr().BucketEpoch--
	wantRefused(t, h.apply(stale), pb.ErrorCode_ERROR_CODE_FENCED, "bucket epoch 3", "current is 4")
}

// TestAdjustIsrRepeatedRequestID: a leader that did not learn the outcome of
// an AdjustIsr retries it with the same request id. Applied already, the
// retry gets the first result and changes nothing, even after the bucket
// moved on; a fresh id for the same change would be FENCED.
func TestAdjustIsrRepeatedRequestID(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	cur := h.bucket(1, 0)
	shrink := withID("shrink", adjustIsr(cur, 1, 2))
	first := h.ok(shrink)
	if first.GetBucket().GetBucketEpoch() != cur.GetBucketEpoch()+1 {
		t.Fatalf("first attempt: %v", first)
	}
	retry := func() {
		t.Helper()
		before := rawDump(t, h.s)
		again := h.ok(withID("shrink", adjustIsr(cur, 1, 2)))
		if !proto.Equal(again.GetBucket(), first.GetBucket()) || again.GetIndex() != first.GetIndex() {
			t.Fatalf("retry answered %v, want %v", again, first)
		}
		if rawDump(t, h.s) != before {
			t.Fatal("a retry changed the state")
		}
	}
	retry()
	// The bucket changes again; the retry still gets the first answer.
	h.ok(adjustIsr(h.bucket(1, 0), 1))
	retry()
	wantRefused(t, h.apply(withID("other", adjustIsr(cur, 1, 2))), pb.ErrorCode_ERROR_CODE_FENCED, "bucket epoch")
}

// TestAdjustIsrMemberEpochs: a leader adding a follower says at which node
// epoch it saw that follower's fetches catch up; a follower registered again
// since (restarted or wiped: it may have lost what it fetched) is not added
// (KIP-903).
func TestAdjustIsrMemberEpochs(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	nodeEpoch := func(id uint32) uint64 {
		t.Helper()
		n, err := h.s.Node(id)
		if err != nil {
			t.Fatal(err)
		}
		return n.GetNodeEpoch()
	}
	add := func(epochs ...*pb.MemberEpoch) *pb.Command {
		cmd := adjustIsr(h.bucket(1, 0), 1, 2)
		cmd.GetAdjustIsr().MemberEpochs = epochs
		return cmd
	}
	h.ok(adjustIsr(h.bucket(1, 0), 1))
	seen := nodeEpoch(2)
	h.ok(registerNode(2, "", RoleTablet)) // node 2 restarts

	wantRefused(t, h.apply(add(&pb.MemberEpoch{NodeId: 2, NodeEpoch: seen})), pb.ErrorCode_ERROR_CODE_INELIGIBLE_REPLICA,
		"node 2 registered again", fmt.Sprint(nodeEpoch(2)))
	wantRefused(t, h.apply(add(&pb.MemberEpoch{NodeId: 2, NodeEpoch: nodeEpoch(2) + 1})), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "newer")
	wantRefused(t, h.apply(add(&pb.MemberEpoch{NodeId: 2, NodeEpoch: nodeEpoch(2)}, &pb.MemberEpoch{NodeId: 2, NodeEpoch: nodeEpoch(2)})),
		pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "two member epochs")
	if b := h.bucket(1, 0); !slices.Equal(b.GetIsr(), []uint32{1}) {
		t.Fatalf("a refused change changed the ISR: %v", b)
	}
	// The epoch of the current registration is accepted; an entry for a
	// member already in the ISR (the leader) is not checked.
	res := h.ok(add(&pb.MemberEpoch{NodeId: 2, NodeEpoch: nodeEpoch(2)}, &pb.MemberEpoch{NodeId: 1, NodeEpoch: 0}))
	if !slices.Equal(res.GetBucket().GetIsr(), []uint32{1, 2}) {
		t.Fatalf("result %v", res)
	}
	// A leader that sends no epochs is not checked.
	h.ok(adjustIsr(h.bucket(1, 0), 1))
	h.ok(registerNode(2, "", RoleTablet))
	h.ok(add())
}
