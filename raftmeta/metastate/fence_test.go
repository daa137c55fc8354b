package metastate

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/floedb/floe/transport/pb"
)

// incarnationFixture: tablet nodes 1..3 with incarnations inc-1..inc-3, and
// table 1 ("db.t") with buckets buckets of replication 3.
func incarnationFixture(t *testing.T, buckets int32) *harness {
	t.Helper()
	h := newHarness(t)
	for i := uint32(1); i <= 3; i++ {
		h.ok(registerIncarnation(i, fmt.Sprint("inc-", i)))
	}
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = buckets, 3 })))
	return h
}

// bk is a bucket record of table 1, bucket 0.
func bk(replicas []uint32, leader uint32, isr []uint32, leaderEpoch, bucketEpoch int32) *pb.BucketRecord {
	return &pb.BucketRecord{TableId: 1, Replicas: replicas, Leader: leader, Isr: isr,
		LeaderEpoch: leaderEpoch, BucketEpoch: bucketEpoch}
}

func goneSet(ids ...uint32) func(uint32) bool {
	return func(id uint32) bool { return slices.Contains(ids, id) }
}

func TestFenceBucket(t *testing.T) {
	r := []uint32{1, 2, 3}
	tests := []struct {
		name string
		b    *pb.BucketRecord
		gone []uint32
		want *pb.BucketRecord // nil: unchanged
	}{
		{"leader gone: next replica leads", bk(r, 1, r, 4, 9), []uint32{1}, bk(r, 2, []uint32{2, 3}, 5, 10)},
		{"leader gone: a replica out of the ISR is skipped", bk(r, 1, []uint32{1, 3}, 4, 9), []uint32{1}, bk(r, 3, []uint32{3}, 5, 10)},
		{"leader gone: assignment order decides",
			bk([]uint32{4, 2, 3}, 2, []uint32{4, 2, 3}, 0, 0), []uint32{2}, bk([]uint32{4, 2, 3}, 4, []uint32{4, 3}, 1, 1)},
		{"leader and next gone", bk(r, 1, r, 0, 0), []uint32{1, 2}, bk(r, 3, []uint32{3}, 1, 1)},
		{"leader gone, no live ISR member: offline, ISR kept", bk(r, 1, []uint32{1, 2}, 3, 3), []uint32{1, 2}, bk(r, 0, []uint32{1, 2}, 4, 4)},
		{"single replica leader gone", bk([]uint32{5}, 5, []uint32{5}, 0, 0), []uint32{5}, bk([]uint32{5}, 0, []uint32{5}, 1, 1)},
		{"follower gone", bk(r, 1, r, 2, 2), []uint32{2}, bk(r, 1, []uint32{1, 3}, 2, 3)},
		{"every follower gone", bk(r, 2, r, 2, 2), []uint32{1, 3, 7}, bk(r, 2, []uint32{2}, 2, 3)},
		{"gone node outside the ISR", bk(r, 1, []uint32{1, 3}, 2, 2), []uint32{2}, nil},
		{"nothing gone", bk(r, 1, r, 2, 2), nil, nil},
		{"unknown nodes gone", bk(r, 1, r, 2, 2), []uint32{0, 9}, nil},
		{"offline, a member back", bk(r, 0, []uint32{1, 2}, 4, 4), []uint32{1}, bk(r, 2, []uint32{2}, 5, 5)},
		{"offline, first member in assignment order",
			bk([]uint32{3, 1, 2}, 0, []uint32{1, 2}, 1, 1), nil, bk([]uint32{3, 1, 2}, 1, []uint32{1, 2}, 2, 2)},
		{"offline, every member gone", bk(r, 0, []uint32{1, 2}, 4, 4), []uint32{1, 2}, nil},
		{"offline, only a non-ISR replica live", bk(r, 0, []uint32{1}, 4, 4), []uint32{1}, nil},
		{"offline, empty ISR: stays offline", bk(r, 0, nil, 4, 4), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := proto.CloneOf(tc.b)
			changed := fenceBucket(b, goneSet(tc.gone...), nil)
			want := tc.want
			if want == nil {
				want = tc.b
			}
			if changed != (tc.want != nil) || !proto.Equal(b, want) {
				t.Errorf("changed %v, %v; want %v", changed, b, want)
			}
			if fenceBucket(b, goneSet(tc.gone...), nil) || !proto.Equal(b, want) {
				t.Errorf("a second run changed %v", b)
			}
		})
	}
}

func TestDropLostReplica(t *testing.T) {
	r := []uint32{1, 2, 3}
	tests := []struct {
		name string
		b    *pb.BucketRecord
		want *pb.BucketRecord // nil: unchanged
	}{
		{"leader lost: next ISR replica leads", bk(r, 1, r, 0, 0), bk(r, 2, []uint32{2, 3}, 1, 1)},
		{"leader lost: non-ISR replica skipped", bk(r, 1, []uint32{1, 3}, 2, 5), bk(r, 3, []uint32{3}, 3, 6)},
		{"follower lost", bk(r, 2, r, 0, 0), bk(r, 2, []uint32{2, 3}, 0, 1)},
		{"not in the ISR", bk(r, 2, []uint32{2, 3}, 0, 4), nil},
		// Issue 11, bug 1: the last in-sync replica, wiped, must not stay in
		// the ISR, or the controller re-elects it with an empty log.
		{"sole ISR member and leader: offline, ISR empty", bk(r, 1, []uint32{1}, 2, 2), bk(r, 0, nil, 3, 3)},
		{"offline, other member: node leaves, nobody elected", bk(r, 0, []uint32{1, 2}, 2, 2), bk(r, 0, []uint32{2}, 2, 3)},
		{"offline, sole member: ISR empty", bk(r, 0, []uint32{1}, 2, 2), bk(r, 0, nil, 2, 3)},
		{"offline, ISR already empty", bk(r, 0, nil, 2, 2), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := proto.CloneOf(tc.b)
			changed := dropLostReplica(b, 1, nil)
			want := tc.want
			if want == nil {
				want = tc.b
			}
			if changed != (tc.want != nil) || !proto.Equal(b, want) {
				t.Errorf("changed %v, %v; want %v", changed, b, want)
			}
			if dropLostReplica(b, 1, nil) || !proto.Equal(b, want) {
				t.Errorf("a second run changed %v", b)
			}
		})
	}
}

// TestWipedLastInSyncReplicaStaysOut is issue 11's bug 1 through Apply: the
// only in-sync replica of a bucket is wiped and registers again; no fencing
// round may then elect it, whatever the liveness of the nodes.
func TestWipedLastInSyncReplicaStaysOut(t *testing.T) {
	h := incarnationFixture(t, 1)
	// The followers fell out of the ISR, then the leader lost its disk.
	setBucket(t, h.s, bk([]uint32{1, 2, 3}, 1, []uint32{1}, 4, 7))
	h.ok(fenceNodes(1))
	if b := h.bucket(1, 0); b.GetLeader() != 0 || !slices.Equal(b.GetIsr(), []uint32{1}) {
		t.Fatalf("after node 1 died: %v", b)
	}
	h.ok(registerIncarnation(1, "wiped"))
	want := bk([]uint32{1, 2, 3}, 0, nil, 5, 9)
	if b := h.bucket(1, 0); !proto.Equal(b, want) {
		t.Fatalf("after node 1 registered wiped: %v, want %v", b, want)
	}
	for _, gone := range [][]uint32{nil, {2}, {2, 3}} {
		h.ok(fenceNodes(gone...))
		if b := h.bucket(1, 0); !proto.Equal(b, want) {
			t.Fatalf("fence %v elected: %v", gone, b)
		}
	}
}

// genBucket draws a bucket that keeps the invariants: 1 to 5 distinct
// replicas among nodes 1..8, an ISR in assignment order, a leader in the ISR
// or none; only an offline bucket may have an empty ISR.
func genBucket(t *rapid.T) *pb.BucketRecord {
	replicas := rapid.SliceOfNDistinct(rapid.Uint32Range(1, 8), 1, 5, rapid.ID[uint32]).Draw(t, "replicas")
	offline := rapid.Bool().Draw(t, "offline")
	var isr []uint32
	for isr == nil {
		for _, r := range replicas {
			if rapid.Bool().Draw(t, "in isr") {
				isr = append(isr, r)
			}
		}
		if offline {
			break
		}
	}
	var leader uint32
	if !offline {
		leader = rapid.SampledFrom(isr).Draw(t, "leader")
	}
	return bk(replicas, leader, isr, rapid.Int32Range(0, 100).Draw(t, "leader epoch"), rapid.Int32Range(0, 100).Draw(t, "bucket epoch"))
}

// checkFenced checks fenceBucket's promises for one bucket, with the nodes
// draining marks (nil: none).
func checkFenced(t *rapid.T, old, b *pb.BucketRecord, changed bool, gone, draining func(uint32) bool) {
	if changed == proto.Equal(old, b) {
		t.Fatalf("changed %v: %v -> %v", changed, old, b)
	}
	checkBucketInvariants(t, b)
	if !slices.Equal(b.GetReplicas(), old.GetReplicas()) || b.GetTableId() != old.GetTableId() || b.GetBucket() != old.GetBucket() {
		t.Fatalf("identity or replicas changed: %v -> %v", old, b)
	}
	checkEpochs(t, old, b, 0)
	for _, id := range b.GetIsr() {
		if !slices.Contains(old.GetIsr(), id) {
			t.Fatalf("node %d joined the ISR: %v -> %v", id, old, b)
		}
	}
	if l := b.GetLeader(); l != 0 {
		if gone(l) || !slices.Contains(old.GetIsr(), l) {
			t.Fatalf("leader %d is gone or was not in the ISR: %v -> %v", l, old, b)
		}
		if l != old.GetLeader() && l != electable(old, gone, draining) {
			t.Fatalf("leader %d is not the first live ISR replica (not draining, if one is): %v -> %v", l, old, b)
		}
		if slices.ContainsFunc(b.GetIsr(), gone) {
			t.Fatalf("gone node left in the ISR of an online bucket: %v", b)
		}
	} else if electable(b, gone, nil) != 0 {
		t.Fatalf("offline with a live ISR member: %v", b)
	}
	if ol := old.GetLeader(); ol != 0 && !gone(ol) && b.GetLeader() != ol {
		t.Fatalf("a live leader moved: %v -> %v", old, b)
	}
}

// checkLost checks dropLostReplica's promises for one bucket: the lost node
// leaves the ISR and the leadership; a lost leader hands over to the first
// remaining ISR member or none; nothing else changes.
func checkLost(t *rapid.T, old, b *pb.BucketRecord, lost uint32) {
	if slices.Contains(b.GetIsr(), lost) || b.GetLeader() == lost {
		t.Fatalf("wiped node %d still leads or is in the ISR: %v -> %v", lost, old, b)
	}
	if !slices.Contains(old.GetIsr(), lost) {
		if !proto.Equal(old, b) {
			t.Fatalf("a bucket without the wiped node %d changed: %v -> %v", lost, old, b)
		}
		return
	}
	wantLeader := old.GetLeader()
	if wantLeader == lost {
		wantLeader = electable(b, func(uint32) bool { return false }, nil)
	}
	if b.GetLeader() != wantLeader || len(b.GetIsr()) != len(old.GetIsr())-1 {
		t.Fatalf("wiped node %d: %v -> %v", lost, old, b)
	}
}

// checkRestarted checks that a node registering again with its incarnation
// gets a new leader epoch for every bucket it leads and changes nothing
// else.
func checkRestarted(t *rapid.T, old, b *pb.BucketRecord, id uint32) {
	want := proto.CloneOf(old)
	if old.GetLeader() == id {
		want.LeaderEpoch++
		want.BucketEpoch++
	}
	if !proto.Equal(want, b) {
		t.Fatalf("node %d registered again: %v -> %v, want %v", id, old, b, want)
	}
}

// checkBucketInvariants: the ISR is a subsequence of the replicas and holds
// the leader; only an offline bucket may have an empty one.
func checkBucketInvariants(t interface{ Fatalf(string, ...any) }, b *pb.BucketRecord) {
	isr := b.GetIsr()
	if len(isr) == 0 && b.GetLeader() != 0 {
		t.Fatalf("empty ISR: %v", b)
	}
	i := 0
	for _, r := range b.GetReplicas() {
		if i < len(isr) && isr[i] == r {
			i++
		}
	}
	if i != len(isr) {
		t.Fatalf("ISR not a subsequence of the replicas: %v", b)
	}
	if b.GetLeader() != 0 && !slices.Contains(isr, b.GetLeader()) {
		t.Fatalf("leader outside the ISR: %v", b)
	}
	if m := b.GetMove(); m != nil {
		// While a move runs, the replicas are the target's, then the
		// original ones leaving.
		if len(m.GetTarget()) == 0 || !slices.Equal(b.GetReplicas(), union(m.GetTarget(), m.GetOriginal())) {
			t.Fatalf("replicas not the move's target then its original replicas: %v", b)
		}
	}
}

// checkEpochs: the bucket epoch rises by one exactly when the record
// changed, the leader epoch exactly when the leader did or when it is
// releader, a leader that registered again.
func checkEpochs(t interface{ Fatalf(string, ...any) }, old, b *pb.BucketRecord, releader uint32) {
	wantBucket, wantLeader := old.GetBucketEpoch(), old.GetLeaderEpoch()
	if !proto.Equal(old, b) {
		wantBucket++
	}
	if b.GetLeader() != old.GetLeader() || (releader != 0 && old.GetLeader() == releader) {
		wantLeader++
	}
	if b.GetBucketEpoch() != wantBucket || b.GetLeaderEpoch() != wantLeader {
		t.Fatalf("epochs: %v -> %v", old, b)
	}
}

func TestFenceBucketProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := genBucket(t)
		gone := goneSet(rapid.SliceOfDistinct(rapid.Uint32Range(1, 8), rapid.ID[uint32]).Draw(t, "gone")...)
		draining := goneSet(rapid.SliceOfDistinct(rapid.Uint32Range(1, 8), rapid.ID[uint32]).Draw(t, "draining")...)
		b := proto.CloneOf(old)
		changed := fenceBucket(b, gone, draining)
		checkFenced(t, old, b, changed, gone, draining)
		if FenceChanges(old, gone) != changed {
			t.Fatalf("FenceChanges %v, fenceBucket changed %v: %v -> %v", !changed, changed, old, b)
		}
		again := proto.CloneOf(b)
		if fenceBucket(again, gone, draining) || !proto.Equal(again, b) {
			t.Fatalf("not idempotent: %v -> %v", b, again)
		}
	})
}

func TestFenceNodes(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(4)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "a", func(c *pb.CreateTable) { c.Buckets, c.Replication = 2, 3 })))
	h.ok(createTable(ordersTable("db", "b", func(c *pb.CreateTable) { c.Buckets, c.Replication = 1, 2 })))
	setBucket(t, h.s, bk([]uint32{1, 2, 3}, 1, []uint32{1, 3}, 0, 1))
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: []uint32{2, 3, 4}, Leader: 2, Isr: []uint32{2, 3, 4}})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 2, Bucket: 0, Replicas: []uint32{4, 1}, Leader: 4, Isr: []uint32{4, 1}})

	steps := []struct {
		name string
		gone []uint32
		want []*pb.BucketRecord // every bucket afterwards
	}{
		{"node 1 gone", []uint32{1}, []*pb.BucketRecord{
			bk([]uint32{1, 2, 3}, 3, []uint32{3}, 1, 2), // 2 is not in the ISR: 3 leads
			{TableId: 1, Bucket: 1, Replicas: []uint32{2, 3, 4}, Leader: 2, Isr: []uint32{2, 3, 4}},
			{TableId: 2, Bucket: 0, Replicas: []uint32{4, 1}, Leader: 4, Isr: []uint32{4}, BucketEpoch: 1},
		}},
		{"the same again", []uint32{1}, nil},
		{"nodes 1 and 3 gone", []uint32{3, 1}, []*pb.BucketRecord{
			bk([]uint32{1, 2, 3}, 0, []uint32{3}, 2, 3), // offline: 2 is live but out of the ISR
			{TableId: 1, Bucket: 1, Replicas: []uint32{2, 3, 4}, Leader: 2, Isr: []uint32{2, 4}, BucketEpoch: 1},
			{TableId: 2, Bucket: 0, Replicas: []uint32{4, 1}, Leader: 4, Isr: []uint32{4}, BucketEpoch: 1},
		}},
		{"the same again", []uint32{1, 3, 1}, nil},
		{"node 3 back", []uint32{1}, []*pb.BucketRecord{
			bk([]uint32{1, 2, 3}, 3, []uint32{3}, 3, 4),
			{TableId: 1, Bucket: 1, Replicas: []uint32{2, 3, 4}, Leader: 2, Isr: []uint32{2, 4}, BucketEpoch: 1},
			{TableId: 2, Bucket: 0, Replicas: []uint32{4, 1}, Leader: 4, Isr: []uint32{4}, BucketEpoch: 1},
		}},
		{"nobody gone", nil, nil},
	}
	prev := h.buckets()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := h.ok(fenceNodes(st.gone...))
			got := h.buckets()
			want := st.want
			if want == nil {
				want = prev
			}
			if len(got) != len(want) {
				t.Fatalf("%d buckets", len(got))
			}
			var changed []*pb.BucketRecord
			for i := range got {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("bucket %d/%d: %v, want %v", got[i].GetTableId(), got[i].GetBucket(), got[i], want[i])
				}
				if !proto.Equal(got[i], prev[i]) {
					changed = append(changed, got[i])
				}
			}
			if res.GetUnchanged() != (len(changed) == 0) || res.GetValue() != nil {
				t.Errorf("result %v with %d buckets changed", res, len(changed))
			}
			u := h.feedAt(h.index)
			if len(changed) == 0 {
				if u != nil {
					t.Errorf("feed update %v", u)
				}
			} else if u == nil || !slices.EqualFunc(u.GetBuckets(), changed, func(a, b *pb.BucketRecord) bool { return proto.Equal(a, b) }) {
				t.Errorf("feed update %v, want buckets %v", u, changed)
			}
			prev = got
		})
	}
	wantRefused(t, h.apply(fenceNodes(make([]uint32, maxGoneNodes+1)...)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed")
}

func TestRegisterNewIncarnation(t *testing.T) {
	r := []uint32{1, 2, 3}
	tests := []struct {
		name        string
		b           *pb.BucketRecord
		incarnation string
		want        *pb.BucketRecord // nil: unchanged
	}{
		{"same incarnation: a new leader epoch", bk(r, 1, r, 0, 0), "inc-1", bk(r, 1, r, 1, 1)},
		{"same incarnation, follower", bk(r, 2, r, 0, 0), "inc-1", nil},
		{"leader wiped: next ISR replica leads", bk(r, 1, r, 0, 0), "inc-2", bk(r, 2, []uint32{2, 3}, 1, 1)},
		{"leader wiped: non-ISR replica skipped", bk(r, 1, []uint32{1, 3}, 2, 5), "inc-2", bk(r, 3, []uint32{3}, 3, 6)},
		{"follower wiped", bk(r, 2, r, 0, 0), "inc-2", bk(r, 2, []uint32{2, 3}, 0, 1)},
		{"not in the ISR", bk(r, 2, []uint32{2, 3}, 0, 4), "inc-2", nil},
		{"sole ISR member and leader: offline, ISR empty", bk(r, 1, []uint32{1}, 2, 2), "inc-2", bk(r, 0, nil, 3, 3)},
		{"offline, other member: node leaves, nobody elected", bk(r, 0, []uint32{1, 2}, 2, 2), "inc-2", bk(r, 0, []uint32{2}, 2, 3)},
		{"offline, sole member: ISR empty", bk(r, 0, []uint32{1}, 2, 2), "inc-2", bk(r, 0, nil, 2, 3)},
		{"incarnation set for the first time", bk(r, 1, r, 0, 0), "", bk(r, 2, []uint32{2, 3}, 1, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := incarnationFixture(t, 1)
			setBucket(t, h.s, tc.b)
			if tc.name == "incarnation set for the first time" {
				h.ok(registerIncarnation(1, "")) // itself a new incarnation
				setBucket(t, h.s, tc.b)
				tc.incarnation = "inc-1"
			}
			res := h.ok(registerIncarnation(1, tc.incarnation))
			if n := res.GetNode(); n.GetNodeEpoch() != h.index || n.GetIncarnation() != tc.incarnation {
				t.Errorf("node %v", n)
			}
			want := tc.want
			if want == nil {
				want = tc.b
			}
			if got := h.bucket(1, 0); !proto.Equal(got, want) {
				t.Errorf("bucket %v, want %v", got, want)
			}
			u := h.feedAt(h.index)
			if len(u.GetNodes()) != 1 || !proto.Equal(u.GetNodes()[0], res.GetNode()) {
				t.Errorf("feed nodes %v", u.GetNodes())
			}
			if tc.want == nil && len(u.GetBuckets()) != 0 || tc.want != nil && (len(u.GetBuckets()) != 1 || !proto.Equal(u.GetBuckets()[0], tc.want)) {
				t.Errorf("feed buckets %v", u.GetBuckets())
			}
		})
	}
}

// TestFenceThroughApply drives random clusters through fences, ISR changes
// and re-registrations and checks every bucket after every command.
func TestFenceThroughApply(t *testing.T) {
	dir := t.TempDir()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		s, err := Open(fmt.Sprintf("%s/state-%d.db", dir, runs), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var index uint64
		apply := func(cmd *pb.Command) *pb.CommandResult {
			index++
			data, err := proto.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			return s.Apply(index, startMs+int64(index), data)
		}
		ok := func(cmd *pb.Command) *pb.CommandResult {
			res := apply(cmd)
			if res.GetError() != "" {
				t.Fatalf("index %d: %v", index, res)
			}
			return res
		}
		image := func() []*pb.BucketRecord {
			img, err := s.Image()
			if err != nil {
				t.Fatal(err)
			}
			return img.GetBuckets()
		}

		nodes := rapid.IntRange(1, 6).Draw(t, "nodes")
		incarnation := make([]int, nodes+1)
		for i := 1; i <= nodes; i++ {
			ok(registerIncarnation(uint32(i), "0"))
		}
		ok(createDB("db"))
		for i := range rapid.IntRange(1, 2).Draw(t, "tables") {
			ok(createTable(ordersTable("db", fmt.Sprint("t", i), func(c *pb.CreateTable) {
				c.Buckets = int32(rapid.IntRange(1, 4).Draw(t, "buckets"))
				c.Replication = int32(rapid.IntRange(1, min(nodes, 3)).Draw(t, "replication"))
			})))
		}
		nodeIDs := rapid.Uint32Range(1, uint32(nodes)+1) // one id never registered

		for range rapid.IntRange(1, 12).Draw(t, "steps") {
			before := image()
			var (
				gone       func(uint32) bool // nil: no bucket may change but by AdjustIsr
				fence      *pb.Command
				refused    bool
				wiped      uint32
				registered uint32
			)
			op := rapid.IntRange(0, 3).Draw(t, "op")
			switch op {
			case 0, 1: // fence
				ids := rapid.SliceOfDistinct(nodeIDs, rapid.ID[uint32]).Draw(t, "gone")
				gone, fence = goneSet(ids...), fenceNodes(ids...)
				ok(fence)
			case 2: // an ISR change from a leader, current or stale
				b := rapid.SampledFrom(before).Draw(t, "bucket")
				isr := []uint32{b.GetLeader()}
				for _, r := range b.GetReplicas() {
					if r != b.GetLeader() && rapid.Bool().Draw(t, "in isr") {
						isr = append(isr, r)
					}
				}
				cmd := adjustIsr(b, isr...)
				if rapid.Bool().Draw(t, "stale") {
					cmd.GetAdjustIsr().BucketEpoch--
				}
				res := apply(cmd)
				refused = res.GetError() != ""
				if wantRefused := b.GetLeader() == 0 || cmd.GetAdjustIsr().GetBucketEpoch() != b.GetBucketEpoch(); refused != wantRefused {
					t.Fatalf("AdjustIsr %v on %v: %v", cmd, b, res)
				}
			case 3: // a node re-registers, perhaps wiped
				id := rapid.IntRange(1, nodes).Draw(t, "node")
				registered = uint32(id)
				if rapid.Bool().Draw(t, "wiped") {
					incarnation[id]++
					wiped = uint32(id)
				}
				ok(registerIncarnation(uint32(id), fmt.Sprint(incarnation[id])))
			}
			after := image()
			u, feedOK := s.Changes(index - 1)
			if !feedOK {
				t.Fatalf("Changes(%d) not ok", index-1)
			}
			var changed []*pb.BucketRecord
			for i := range after {
				checkBucketInvariants(t, after[i])
				checkEpochs(t, before[i], after[i], registered)
				if !proto.Equal(before[i], after[i]) {
					changed = append(changed, after[i])
				}
				switch {
				case gone != nil:
					checkFenced(t, before[i], after[i], !proto.Equal(before[i], after[i]), gone, nil)
				case wiped != 0:
					checkLost(t, before[i], after[i], wiped)
				case registered != 0:
					checkRestarted(t, before[i], after[i], registered)
				}
			}
			if refused && len(changed) > 0 {
				t.Fatalf("a refused AdjustIsr changed %v", changed)
			}
			if len(changed) > 0 || op == 3 {
				if len(u) != 1 || u[0].GetIndex() != index || len(u[0].GetNodes()) != op/3 ||
					!slices.EqualFunc(u[0].GetBuckets(), changed, func(a, b *pb.BucketRecord) bool { return proto.Equal(a, b) }) {
					t.Fatalf("feed %v, want buckets %v", u, changed)
				}
			} else if len(u) != 0 {
				t.Fatalf("feed %v for no change", u)
			}
			if fence != nil {
				res := ok(fence)
				if !res.GetUnchanged() || !slices.EqualFunc(image(), after, func(a, b *pb.BucketRecord) bool { return proto.Equal(a, b) }) {
					t.Fatalf("the same fence again changed something: %v", res)
				}
			}
		}
	})
}

// TestRegisterAgain is issue 11's bugs 2 and 3 on the metadata side: a node
// that registers again with its incarnation (a restart) may have lost an
// unsynced tail its followers hold, so every bucket it leads gets a new
// leader epoch; the buckets it only follows do not change.
func TestRegisterAgain(t *testing.T) {
	h := incarnationFixture(t, 2)
	registerInc := func() *pb.Command { return registerIncarnation(1, "inc-1") }
	r := []uint32{1, 2, 3}
	led := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 1, Isr: r, LeaderEpoch: 4, BucketEpoch: 7}
	followed := &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 2, Isr: r, LeaderEpoch: 2, BucketEpoch: 2}
	setBucket(t, h.s, led)
	setBucket(t, h.s, followed)

	for epoch := int32(5); epoch <= 6; epoch++ {
		res := h.ok(registerInc())
		want := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 1, Isr: r, LeaderEpoch: epoch, BucketEpoch: epoch + 3}
		if b := h.bucket(1, 0); !proto.Equal(b, want) {
			t.Fatalf("led bucket after registration %d: %v, want %v", res.GetNode().GetNodeEpoch(), b, want)
		}
		if b := h.bucket(1, 1); !proto.Equal(b, followed) {
			t.Fatalf("followed bucket changed: %v", b)
		}
		u := h.feedAt(h.index)
		if len(u.GetNodes()) != 1 || len(u.GetBuckets()) != 1 || !proto.Equal(u.GetBuckets()[0], want) {
			t.Fatalf("feed %v", u)
		}
	}
	// The retry of one registration (same request id) raises nothing again.
	h.ok(withID("reg", registerInc()))
	before := h.bucket(1, 0)
	h.ok(withID("reg", registerInc()))
	if b := h.bucket(1, 0); !proto.Equal(b, before) {
		t.Fatalf("a retried registration raised the epoch again: %v -> %v", before, b)
	}
}
