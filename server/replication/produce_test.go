package replication

import (
	"testing"
	"time"
)

// docs/replication.md, produce 1: a replica that does not lead refuses
// writes; acks=all with a committed ISR below min.insync.replicas is refused
// before any append.
func TestCheckWrite(t *testing.T) {
	follower := New(Config{Self: 2, ReplicaLagMax: lagMax, MinISR: 2}, Log{LatestEpoch: -1})
	follower.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2, 3}}, 0, t0)
	for _, tc := range []struct {
		name string
		b    *Bucket
		acks int
		want error
	}{
		{"follower", follower, AcksLeader, ErrNotLeader},
		{"ISR below min, acks=all", leaderOf(t, []uint32{1}, 0), AcksAll, ErrNotEnoughReplicas},
		{"ISR below min, acks=1", leaderOf(t, []uint32{1}, 0), AcksLeader, nil},
		{"ISR at min", leaderOf(t, []uint32{1, 2}, 0), AcksAll, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			epoch, err := tc.b.CheckWrite(tc.acks)
			if tc.want == nil {
				if err != nil || epoch != 1 {
					t.Fatalf("CheckWrite = %d, %v; want epoch 1", epoch, err)
				}
				return
			}
			wantErr(t, err, tc.want)
		})
	}
}

// docs/replication.md, produce 4 (issue 11, bug 4): acks=all is answered
// once the high watermark passes the write and the ISR still has
// min.insync.replicas members; a write whose ISR shrank below it meanwhile
// gets the retriable NOT_ENOUGH_REPLICAS_AFTER_APPEND, not a success.
func TestAckAllRechecksMinISR(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 0)
	epoch, err := b.CheckWrite(AcksAll)
	if err != nil {
		t.Fatal(err)
	}
	b.DurableEnd(10) // offsets 0..9 appended and synced on the leader
	if done, err := b.AckAll(9, epoch); done || err != nil {
		t.Fatalf("before followers fetched: done=%v err=%v", done, err)
	}
	// Follower 3 stops fetching; it is proposed out after ReplicaLagMax and
	// the controller commits ISR {1} (say 2 was removed by fencing too).
	fetch(t, b, 2, 0, 10, t0)
	now := t0.Add(lagMax + time.Second)
	eff := b.Tick(now)
	if eff.Propose == nil {
		t.Fatal("no ISR shrink proposed")
	}
	b.ProposalOutcome(eff.Propose.ID, Committed, &Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1}}, now)
	wantHW(t, b, 10)
	done, err := b.AckAll(9, epoch)
	if done {
		t.Fatal("acks=all acknowledged with one in-sync replica, min.insync.replicas 2")
	}
	wantErr(t, err, ErrNotEnoughReplicasAfterAppend)
	// min.insync.replicas changed to 1 takes effect for the waiting write.
	b.SetMinISR(1)
	if done, err := b.AckAll(9, epoch); !done || err != nil {
		t.Fatalf("after min.insync.replicas=1: done=%v err=%v", done, err)
	}
}

// docs/replication.md, produce 4: a write waiting for acks=all fails
// NOT_LEADER once the replica stops leading its epoch, and a deposed leader
// cannot acknowledge (ISR changes 3).
func TestAckAllFailsWhenDeposed(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 0)
	b.DurableEnd(5)
	eff := b.Assign(Assignment{Leader: 2, LeaderEpoch: 2, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{2}}, 5, t0)
	if !eff.RoleChanged {
		t.Fatal("no RoleChanged when deposed")
	}
	_, err := b.AckAll(4, 1)
	wantErr(t, err, ErrNotLeader)
	_, _, err = b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 5, LastFetchedEpoch: 1},
		LeaderLog{WrittenEnd: 5, EpochEnd: oneEpoch(1, 5)}, t0)
	wantErr(t, err, ErrNotLeader)
}

// docs/replication.md, tablet nodes 3 (issue 11, bugs 2 and 3): a replica
// whose log already holds leader epoch E from before it opened (it led E,
// restarted and may have lost an unsynced tail its followers copied) refuses
// to lead E again; it leads the next epoch the controller gives it.
func TestStaleLeadershipRefused(t *testing.T) {
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 1}, Log{HWCheckpoint: 3, DurableEnd: 5, LatestEpoch: 4})
	a := Assignment{Leader: 1, LeaderEpoch: 4, BucketEpoch: 7, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}
	eff := b.Assign(a, 5, t0)
	if !eff.StaleLeadership || eff.StartEpoch {
		t.Fatalf("stale leadership: effects %+v", eff)
	}
	if _, err := b.CheckWrite(AcksLeader); err == nil {
		t.Fatal("a stale leader took a write")
	}
	if eff := b.Assign(a, 5, t0); eff.StartEpoch {
		t.Fatal("the same stale assignment led on its second delivery")
	}
	a.LeaderEpoch, a.BucketEpoch = 5, 8
	if eff := b.Assign(a, 5, t0); !eff.StartEpoch {
		t.Fatalf("new epoch: effects %+v", eff)
	}
	if epoch, err := b.CheckWrite(AcksLeader); err != nil || epoch != 5 {
		t.Fatalf("CheckWrite = %d, %v", epoch, err)
	}
	// Leading the same epoch again in the same run is not stale (a new ISR
	// arrives for the epoch it leads).
	a.BucketEpoch = 9
	if eff := b.Assign(a, 5, t0); eff.StaleLeadership || eff.RoleChanged {
		t.Fatalf("same epoch, newer bucket epoch: effects %+v", eff)
	}
}

// Epochs only grow: metadata older than what the replica saw changes
// nothing.
func TestStaleMetadataIgnored(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 0)
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 3, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, 0, t0)
	for _, a := range []Assignment{
		{Leader: 2, LeaderEpoch: 0, BucketEpoch: 9, Replicas: []uint32{1, 2, 3}, ISR: []uint32{2}},
		{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2, 3}},
	} {
		if eff := b.Assign(a, 0, t0); eff != (Effects{}) {
			t.Fatalf("stale %+v: effects %+v", a, eff)
		}
		if r, _, e := b.Role(); r != RoleLeader || e != 1 || b.BucketEpoch() != 3 || len(b.ISR()) != 2 {
			t.Fatalf("stale %+v changed the state: %v", a, b)
		}
	}
}

// Invariants fail loudly.
func TestInvariantsPanic(t *testing.T) {
	mustPanicInvariant(t, func() { New(Config{Self: 1}, Log{}) })
	mustPanicInvariant(t, func() {
		b := leaderOf(t, []uint32{1}, 10)
		b.hw = 11 // past the durable end
		b.check()
	})
	mustPanicInvariant(t, func() {
		b := leaderOf(t, []uint32{1}, 10)
		b.DurableEnd(10)
		b.hw = 5 // back within the epoch
		b.check()
	})
	mustPanicInvariant(t, func() { leaderOf(t, []uint32{1}, 10).Truncated(3) })
}

// docs/replication.md, tablet nodes 3 (issue 11, bug 2): a node acts on no
// metadata older than its registration. A wiped leader that restarts and
// first sees the image it had before (naming it leader of an epoch whose log
// it lost) must not lead that epoch with an empty log; nor may a node that
// registered again act on an image from before that registration.
func TestMetadataBelowRegistrationIgnored(t *testing.T) {
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 1, NodeEpoch: 7}, Log{LatestEpoch: -1})
	stale := Assignment{Leader: 1, LeaderEpoch: 0, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}, Index: 4}
	if eff := b.Assign(stale, 0, t0); !eff.StaleMetadata || eff.StartEpoch || eff.RoleChanged {
		t.Fatalf("image of index 4 below node epoch 7: effects %+v", eff)
	}
	if r, _, _ := b.Role(); r != RoleNone {
		t.Fatalf("role %v after a stale image", r)
	}
	current := Assignment{Leader: 2, LeaderEpoch: 1, BucketEpoch: 3, Replicas: []uint32{1, 2, 3}, ISR: []uint32{2}, Index: 7}
	if eff := b.Assign(current, 0, t0); !eff.RoleChanged {
		t.Fatalf("image at the registration index: effects %+v", eff)
	}
	if r, leader, epoch := b.Role(); r != RoleFollower || leader != 2 || epoch != 1 {
		t.Fatalf("role %v of leader %d epoch %d", r, leader, epoch)
	}
	// The node registers again at 12: an image of index 9 naming it
	// leader predates the epoch bump that registration made.
	b.SetNodeEpoch(12)
	old := Assignment{Leader: 1, LeaderEpoch: 2, BucketEpoch: 4, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}, Index: 9}
	if eff := b.Assign(old, 0, t0); !eff.StaleMetadata || eff.StartEpoch {
		t.Fatalf("image of index 9 below node epoch 12: effects %+v", eff)
	}
	mustPanicInvariant(t, func() { b.SetNodeEpoch(11) })
	// An assignment without an index is not checked (callers that do not
	// track it keep today's behaviour).
	old.Index = 0
	if eff := b.Assign(old, 0, t0); !eff.StartEpoch {
		t.Fatalf("image without an index: effects %+v", eff)
	}
}

// A replica whose log holds leader epoch 5 refuses to follow in epoch 3
// (metadata older than its own data, e.g. an image without an index read
// at a restart): it would fetch from a deposed leader that counts it at
// offsets where it holds epoch-5 batches, or truncate data epoch 5
// committed. It follows once metadata of epoch 5 or later comes.
func TestStaleFollowershipRefused(t *testing.T) {
	b := New(Config{Self: 2, ReplicaLagMax: lagMax, MinISR: 1}, Log{HWCheckpoint: 8, DurableEnd: 10, LatestEpoch: 5})
	a := Assignment{Leader: 1, LeaderEpoch: 3, BucketEpoch: 4, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}
	eff := b.Assign(a, 10, t0)
	if !eff.StaleFollowership {
		t.Fatalf("following epoch 3 with epoch 5 in the log: effects %+v", eff)
	}
	if _, _, _, ok := b.FollowerFetchFrom(); ok {
		t.Fatal("a stale follower fetches")
	}
	a.LeaderEpoch, a.BucketEpoch = 5, 9
	if eff := b.Assign(a, 10, t0); eff.StaleFollowership || !eff.RoleChanged {
		t.Fatalf("epoch 5: effects %+v", eff)
	}
	if leader, epoch, offset, ok := b.FollowerFetchFrom(); !ok || leader != 1 || epoch != 5 || offset != 10 {
		t.Fatalf("FollowerFetchFrom = %d, %d, %d, %v", leader, epoch, offset, ok)
	}
}
