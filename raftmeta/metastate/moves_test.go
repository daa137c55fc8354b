package metastate

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

func moveReplicas(max int32, throttle int64, moves ...*pb.BucketMove) *pb.Command {
	return &pb.Command{Op: &pb.Command_MoveReplicas{MoveReplicas: &pb.MoveReplicas{Moves: moves, MaxMoves: max,
		ThrottleBytesPerS: throttle, NowMs: startMs}}}
}

func move(table uint64, bucket int32, target ...uint32) *pb.BucketMove {
	return &pb.BucketMove{TableId: table, Bucket: bucket, Target: target}
}

func completeMove(b *pb.BucketRecord, live ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_CompleteMove{CompleteMove: &pb.CompleteMove{TableId: b.GetTableId(), Bucket: b.GetBucket(),
		BucketEpoch: b.GetBucketEpoch(), LiveNodes: live}}}
}

func cancelMove(table uint64, bucket int32, all bool, live ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_CancelMove{CancelMove: &pb.CancelMove{TableId: table, Bucket: bucket, All: all, LiveNodes: live}}}
}

// A move runs in two commits: the learners join the replicas (the ISR
// untouched), then, once all of the target is in sync, the target is the
// replica set; the replicas that left are named for deletion, and the
// leader epoch rises although the leader stays.
func TestMoveStartsAndCompletes(t *testing.T) {
	h := bucketFixture(t, 5, 1, 2, 3)
	start := h.ok(moveReplicas(0, 0, move(1, 0, 1, 4, 5)))
	b := h.bucket(1, 0)
	if !slices.Equal(b.GetReplicas(), []uint32{1, 4, 5, 2, 3}) || !slices.Equal(b.GetIsr(), []uint32{1, 2, 3}) ||
		b.GetLeaderEpoch() != 0 || b.GetBucketEpoch() != 1 {
		t.Fatalf("started: %v", b)
	}
	if m := b.GetMove(); !slices.Equal(m.GetOriginal(), []uint32{1, 2, 3}) || !slices.Equal(m.GetTarget(), []uint32{1, 4, 5}) {
		t.Fatalf("move %v", m)
	}
	if plan := start.GetMoves().GetPlan(); len(plan.GetRunning()) != 1 || plan.GetMaxMoves() != DefaultMaxMoves {
		t.Fatalf("plan %v", plan)
	}
	wantRefused(t, h.apply(completeMove(b, 1, 2, 3, 4, 5)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "node 4", "not in sync")
	// the leader proposes the learners in, one by one
	h.ok(adjustIsr(b, 1, 4, 2, 3))
	b = h.bucket(1, 0)
	wantRefused(t, h.apply(completeMove(b, 1, 2, 3, 4, 5)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "node 5")
	h.ok(adjustIsr(b, 1, 4, 5, 2, 3))
	b = h.bucket(1, 0)
	stale := proto.CloneOf(b)
	stale.BucketEpoch--
	wantRefused(t, h.apply(completeMove(stale, 1, 2, 3, 4, 5)), pb.ErrorCode_ERROR_CODE_FENCED, "bucket epoch")
	h.ok(completeMove(b, 1, 2, 3, 4, 5))
	done := h.bucket(1, 0)
	want := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: []uint32{1, 4, 5}, Isr: []uint32{1, 4, 5}, Leader: 1,
		LeaderEpoch: 1, BucketEpoch: b.GetBucketEpoch() + 1}
	if !proto.Equal(done, want) {
		t.Fatalf("completed: %v, want %v", done, want)
	}
	u := h.feedAt(h.index)
	if len(u.GetRemovedReplicas()) != 1 || !slices.Equal(u.GetRemovedReplicas()[0].GetNodes(), []uint32{2, 3}) {
		t.Fatalf("feed names removals %v, want nodes 2 and 3", u.GetRemovedReplicas())
	}
	// node 2's stream says it lost the replica; node 4's does not
	got, _ := h.s.ChangesFor(h.index-1, 2, 0)
	if len(got) != 1 || len(got[0].GetRemovedReplicas()) != 1 || len(got[0].GetBuckets()) != 0 {
		t.Fatalf("node 2's stream: %v", got)
	}
	got, _ = h.s.ChangesFor(h.index-1, 4, 0)
	if len(got) != 1 || len(got[0].GetRemovedReplicas()) != 0 || len(got[0].GetBuckets()) != 1 {
		t.Fatalf("node 4's stream: %v", got)
	}
	checkBucketInvariants(t, done)
}

// A leader that leaves hands over to the first live target replica that
// is not draining.
func TestMoveHandsLeadershipToTheTarget(t *testing.T) {
	h := bucketFixture(t, 5, 1, 2, 3)
	h.ok(moveReplicas(0, 0, move(1, 0, 3, 4, 5)))
	b := h.bucket(1, 0)
	h.ok(adjustIsr(b, 3, 4, 5, 1, 2))
	b = h.bucket(1, 0)
	wantRefused(t, h.apply(completeMove(b, 1, 2)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "alive to lead")
	h.ok(completeMove(b, 4, 5))
	done := h.bucket(1, 0)
	if done.GetLeader() != 4 || done.GetLeaderEpoch() != b.GetLeaderEpoch()+1 || !slices.Equal(done.GetIsr(), []uint32{3, 4, 5}) {
		t.Fatalf("completed: %v", done)
	}
}

// Cancelling goes back to the original replicas; a leader that joined
// with the move (elected while it ran) hands back to an original in-sync
// replica. With none of those in sync, only completing keeps the data.
func TestMoveCancel(t *testing.T) {
	h := bucketFixture(t, 5, 1, 2, 3)
	h.ok(moveReplicas(0, 0, move(1, 0, 4, 5, 1)))
	b := h.bucket(1, 0)
	h.ok(adjustIsr(b, 4, 1, 2, 3))
	// node 1 dies; 4 leads (first in sync of the target order)
	h.ok(fenceNodes(1))
	b = h.bucket(1, 0)
	if b.GetLeader() != 4 {
		t.Fatalf("after the fence: %v", b)
	}
	h.ok(cancelMove(1, 0, false, 2, 3, 4, 5))
	c := h.bucket(1, 0)
	if c.GetMove() != nil || !slices.Equal(c.GetReplicas(), []uint32{1, 2, 3}) || c.GetLeader() != 2 ||
		!slices.Equal(c.GetIsr(), []uint32{2, 3}) || c.GetLeaderEpoch() != b.GetLeaderEpoch()+1 {
		t.Fatalf("cancelled: %v", c)
	}
	wantRefused(t, h.apply(cancelMove(1, 0, false)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "not moving")

	// a move whose original replicas all fell out of sync cannot go back
	h2 := bucketFixture(t, 5, 1, 2)
	h2.ok(moveReplicas(0, 0, move(1, 0, 3, 4)))
	b = h2.bucket(1, 0)
	h2.ok(adjustIsr(b, 3, 4, 1))
	b = h2.bucket(1, 0)
	h2.ok(electLeaders(0, false, 3, 4)) // 1 is dead: 3 leads
	b = h2.bucket(1, 0)
	h2.ok(adjustIsr(b, 3, 4))
	before := rawDump(t, h2.s)
	wantRefused(t, h2.apply(cancelMove(1, 0, false, 3, 4)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "only completing the move")
	if rawDump(t, h2.s) != before {
		t.Fatal("a refused cancel changed the state")
	}
}

// Moves beyond max_moves wait in the plan's queue and start, in order, as
// running ones end; cancel all drops the queue and goes back where it can.
func TestMoveQueue(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(5)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 4, 3 })))
	for i := range int32(4) {
		r := []uint32{1, 2, 3}
		setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: i, Replicas: r, Leader: 1, Isr: r})
	}
	res := h.ok(moveReplicas(2, 20<<20, move(1, 0, 1, 2, 4), move(1, 1, 1, 2, 4), move(1, 2, 1, 2, 5), move(1, 3, 1, 2, 5)))
	if got := res.GetMoves(); len(got.GetBuckets()) != 2 || len(got.GetQueued()) != 2 || got.GetPlan().GetThrottleBytesPerS() != 20<<20 {
		t.Fatalf("result %v", got)
	}
	if u := h.feedAt(h.index); u.GetMoveBounds().GetMaxMoves() != 2 || u.GetMoveBounds().GetThrottleBytesPerS() != 20<<20 {
		t.Fatalf("feed bounds %v", u.GetMoveBounds())
	}
	if h.bucket(1, 2).GetMove() != nil {
		t.Fatal("a queued move started")
	}
	wantRefused(t, h.apply(moveReplicas(0, 0, move(1, 2, 2, 3, 4))), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "queued")
	wantRefused(t, h.apply(moveReplicas(0, 0, move(1, 0, 2, 3, 4))), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "moving already")
	// bucket 0 completes: bucket 2 starts
	b := h.bucket(1, 0)
	h.ok(adjustIsr(b, 1, 2, 4, 3))
	h.ok(completeMove(h.bucket(1, 0), 1, 2, 3, 4, 5))
	if h.bucket(1, 2).GetMove() == nil || h.bucket(1, 3).GetMove() != nil {
		t.Fatalf("after a completion: bucket 2 %v, bucket 3 %v", h.bucket(1, 2), h.bucket(1, 3))
	}
	// cancel all: the queue goes, the running ones go back
	res = h.ok(cancelMove(0, 0, true, 1, 2, 3, 4, 5))
	if got := res.GetMoves(); len(got.GetBuckets()) != 2 || len(got.GetQueued()) != 1 || len(got.GetPlan().GetRunning()) != 0 {
		t.Fatalf("cancel all: %v", got)
	}
	for i := range int32(4) {
		if b := h.bucket(1, i); b.GetMove() != nil {
			t.Fatalf("bucket %d still moving: %v", i, b)
		}
	}
	// the bounds reach the image
	img, err := h.s.Image()
	if err != nil {
		t.Fatal(err)
	}
	if img.GetMoveBounds().GetMaxMoves() != 2 {
		t.Fatalf("image bounds %v", img.GetMoveBounds())
	}
}

// Invalid moves are refused whole, naming the one at fault.
func TestMoveRefusals(t *testing.T) {
	h := bucketFixture(t, 4, 1, 2, 3)
	h.ok(registerNode(9, "", RoleMeta))
	before := rawDump(t, h.s)
	tests := []struct {
		cmd  *pb.Command
		code pb.ErrorCode
		want string
	}{
		{moveReplicas(0, 0, move(1, 0)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "target of 0"},
		{moveReplicas(0, 0, move(1, 0, 1, 1, 2)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "listed twice"},
		{moveReplicas(0, 0, move(1, 0, 1, 2, 7)), pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 7"},
		{moveReplicas(0, 0, move(1, 0, 1, 2, 9)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "not a tablet node"},
		{moveReplicas(0, 0, move(1, 0, 1, 2, 3)), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "already"},
		{moveReplicas(0, 0, move(1, 5, 1, 2, 4)), pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "no bucket 5"},
		{moveReplicas(0, 0, move(1, 0, 1, 2, 4), move(1, 0, 1, 2, 4)), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "twice"},
		{moveReplicas(MaxRunningMoves+1, 0), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "moves at once"},
		{moveReplicas(0, -2), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "throttle"},
		{moveReplicas(0, 0, make([]*pb.BucketMove, MaxMovesPerCommand+1)...), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed"},
	}
	for _, tc := range tests {
		wantRefused(t, h.apply(tc.cmd), tc.code, tc.want)
	}
	if rawDump(t, h.s) != before {
		t.Fatal("a refused move changed the state")
	}
}

// Removing a dead node takes it out of a move in progress as well.
func TestRemoveNodeDuringAMove(t *testing.T) {
	h := bucketFixture(t, 5, 1, 2, 3)
	h.ok(moveReplicas(0, 0, move(1, 0, 1, 2, 4)))
	h.ok(removeNode(4, 1, 2, 3, 5))
	b := h.bucket(1, 0)
	if b.GetMove() == nil || !slices.Equal(b.GetMove().GetTarget(), []uint32{1, 2}) || slices.Contains(b.GetReplicas(), 4) {
		t.Fatalf("after removing node 4: %v", b)
	}
	checkBucketInvariants(t, b)
}
