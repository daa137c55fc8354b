package replication

import (
	"slices"
	"testing"
)

// Moving replicas (docs/replication.md, moving replicas): scenarios of the
// core under replica-set changes. The seeded simulation runs them with
// faults (sim_controller_test.go's startMove, completeMove, cancelMove).

// A joining replica is a learner: it fetches, counts for neither the high
// watermark nor acks, and is proposed into the ISR by the usual rule once
// it reached the high watermark.
func TestLearnerJoinsByTheISRRule(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 10)
	fetch(t, b, 2, 10, 10, t0)
	fetch(t, b, 3, 10, 10, t0)
	wantHW(t, b, 10)
	// the move to 1, 2, 4 starts: 4 joins, 3 stays until the end
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 4, 3}, ISR: []uint32{1, 2, 3}}, 10, t0)
	if b.DurableEnd(20); b.HW() != 10 {
		t.Fatalf("high watermark %d before any follower fetched past 10", b.HW())
	}
	fetch(t, b, 2, 20, 20, t0)
	_, eff := fetch(t, b, 3, 20, 20, t0)
	if !eff.HWAdvanced || b.HW() != 20 {
		t.Fatalf("the ISR reached 20, high watermark %d (%+v)", b.HW(), eff)
	}
	// the learner far behind holds nothing back and is not proposed
	_, eff = fetch(t, b, 4, 0, 20, t0)
	if eff.Propose != nil || b.HW() != 20 {
		t.Fatalf("learner at 0: proposal %v, high watermark %d", eff.Propose, b.HW())
	}
	_, eff = fetch(t, b, 4, 20, 20, t0)
	if eff.Propose == nil || !slices.Equal(eff.Propose.ISR, []uint32{1, 2, 4, 3}) {
		t.Fatalf("learner caught up: proposal %v, want ISR [1 2 4 3]", eff.Propose)
	}
}

// A replica taken away and added back in the same leader epoch (which the
// controller never does: a replica leaving raises the leader epoch) starts
// afresh: what it reported before, from a log it deleted, is forgotten.
func TestRemovedReplicaForgetsItsProgress(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 10)
	fetch(t, b, 2, 10, 10, t0)
	fetch(t, b, 3, 10, 10, t0) // 3 caught up, not yet proposed in
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}, 10, t0)
	if b.FollowerEnd(3) != -1 {
		t.Fatalf("node 3 left the replicas, the leader still has its end at %d", b.FollowerEnd(3))
	}
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 3, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, 10, t0)
	if eff := b.Tick(t0); eff.Propose != nil {
		t.Fatalf("node 3 back with an empty log, proposed %v before it fetched", eff.Propose)
	}
	_, eff := fetch(t, b, 3, 0, 10, t0)
	if eff.Propose != nil {
		t.Fatalf("node 3 at 0 proposed into the ISR: %v", eff.Propose)
	}
}

// A move that takes a replica away raises the leader epoch even when the
// leader stays: a late fetch the removed replica sent in the old epoch is
// fenced, so it cannot be taken for the fetch of the node's next replica
// (empty) and count it in sync.
func TestLateFetchOfARemovedReplicaIsFenced(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 10)
	old := FollowerFetch{Follower: 3, LeaderEpoch: 1, Offset: 10, LastFetchedEpoch: 1}
	// the move ends without 3 (leader epoch 2), then 3 is added again
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 2, BucketEpoch: 2, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}, 10, t0)
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 2, BucketEpoch: 3, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, 10, t0)
	_, eff, err := b.ServeFetch(old, LeaderLog{WrittenEnd: 10, EpochEnd: oneEpoch(1, 10)}, t0)
	wantErr(t, err, ErrFenced)
	if eff.Propose != nil {
		t.Fatalf("a fenced fetch proposed %v", eff.Propose)
	}
}
