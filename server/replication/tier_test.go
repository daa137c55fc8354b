package replication

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestLostCommitted: a leader whose epoch started at 10 lost committed
// records when a follower of an earlier epoch names a high watermark past
// 10; not when the follower is of this epoch, has no batch, names 10 or
// less, after an unclean election, or when the leader is not one.
func TestLostCommitted(t *testing.T) {
	b := New(Config{Self: 1, ReplicaLagMax: time.Second}, Log{DurableEnd: 10, LatestEpoch: 2})
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 3, BucketEpoch: 3, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}, 10, t0)
	if b.EpochStart() != 10 {
		t.Fatalf("epoch start %d, want 10", b.EpochStart())
	}
	cases := []struct {
		name      string
		lastEpoch int32
		hw        int64
		unclean   bool
		want      bool
	}{
		{"an earlier epoch's follower past the start", 2, 12, false, true},
		{"at the start", 2, 10, false, false},
		{"a follower of this epoch", 3, 12, false, false},
		{"a follower without a batch", -1, 12, false, false},
		{"after an unclean election", 2, 12, true, false},
	}
	for _, c := range cases {
		if got := b.LostCommitted(c.lastEpoch, c.hw, c.unclean); got != c.want {
			t.Errorf("%s: LostCommitted = %v, want %v", c.name, got, c.want)
		}
	}
	f := New(Config{Self: 2, ReplicaLagMax: time.Second}, Log{DurableEnd: 10, LatestEpoch: 2})
	f.Assign(Assignment{Leader: 1, LeaderEpoch: 3, BucketEpoch: 3, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}, 10, t0)
	if f.LostCommitted(2, 12, false) {
		t.Error("a follower judged a fetch")
	}
}

// TestDamageGates: a replica may leave the ISR for damage only while
// another member holds the records, and cut only out of the ISR, not
// leading, from where the leader's copies start or later; lost records
// need no other copy.
func TestDamageGates(t *testing.T) {
	at := func(self uint32, isr []uint32, leader uint32) *Bucket {
		b := New(Config{Self: self, ReplicaLagMax: time.Second}, Log{DurableEnd: 10, LatestEpoch: -1})
		b.Assign(Assignment{Leader: leader, LeaderEpoch: 3, BucketEpoch: 3, Replicas: []uint32{1, 2}, ISR: isr}, 10, t0)
		return b
	}
	if at(1, []uint32{1}, 1).OtherInSyncCopy() {
		t.Error("the only ISR member found another in-sync copy")
	}
	if !at(1, []uint32{1, 2}, 1).OtherInSyncCopy() {
		t.Error("ISR {1, 2}: no other in-sync copy found")
	}
	out := at(1, []uint32{2}, 2)
	switch {
	case !out.MayCutDamaged(false, 5, 5):
		t.Error("out of the ISR, the leader's copies from 5: may not cut at 5")
	case out.MayCutDamaged(false, 5, 6):
		t.Error("the leader's copies start at 6, past the damage at 5: cut anyway")
	case !out.MayCutDamaged(true, 5, 6):
		t.Error("lost records may not be cut")
	case at(1, []uint32{1, 2}, 2).MayCutDamaged(false, 5, 0):
		t.Error("an ISR member cut its log")
	}
	if HeldFrom(100, RemoteView{Start: 0, CoveredFrom: 40, End: 120}) != 40 || HeldFrom(100, RemoteView{Start: 0, CoveredFrom: 40, End: 90}) != 100 ||
		HeldFrom(100, RemoteView{Start: 0, CoveredFrom: 40, End: 120, Fenced: true}) != 100 {
		t.Error("HeldFrom: the remote log counts only when it reaches the leader's start and is not fenced")
	}
}

// A lost tail (LostTail) refuses the leader's work until it is cut away,
// is reported when a peer can give it back and forgotten when none can,
// and keeps the leader from taking a follower's high watermark for a
// second loss.
func TestLostTail(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 10)
	if _, ok := b.TailLost(); ok {
		t.Fatal("a new replica reports a lost tail")
	}
	b.LostTail(7)
	if from, ok := b.TailLost(); !ok || from != 7 {
		t.Fatalf("TailLost = %d, %v", from, ok)
	}
	if _, err := b.CheckWrite(AcksAll); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a write with a lost tail: %v", err)
	}
	l := LeaderLog{WrittenEnd: 7, EpochEnd: oneEpoch(1, 7)}
	if _, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 5, LastFetchedEpoch: 1}, l, t0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower fetch from a lost tail: %v", err)
	}
	if b.LostCommitted(0, 9, false) {
		t.Fatal("a lost tail reported again as lost committed records")
	}
	if !b.ReportLostTail() {
		t.Fatal("a replica with a peer does not report its lost tail")
	}
	if b.MayCutDamaged(true, 7, 7) {
		t.Fatal("a leader may cut its lost tail")
	}
	b.Assign(Assignment{Leader: 2, LeaderEpoch: 2, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{2}}, 7, t0)
	if !b.MayCutDamaged(true, 7, 7) {
		t.Fatal("a follower out of the ISR may not cut its lost tail")
	}
	b.Truncated(8)
	if _, ok := b.TailLost(); !ok {
		t.Fatal("a cut above the loss forgot it")
	}
	b.Truncated(7)
	if _, ok := b.TailLost(); ok {
		t.Fatal("the cut at the loss did not end it")
	}

	// One replica: nothing to fetch it from, so the loss is forgotten
	// and the leader serves what is left.
	one := New(Config{Self: 1, ReplicaLagMax: lagMax}, Log{DurableEnd: 10, LatestEpoch: 0})
	one.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1}, ISR: []uint32{1}}, 10, t0)
	one.LostTail(7)
	if one.ReportLostTail() {
		t.Fatal("a bucket of one replica reports its lost tail")
	}
	if _, err := one.CheckWrite(AcksAll); err != nil {
		t.Fatalf("a bucket of one replica refuses writes after its lost tail: %v", err)
	}
}

// TestLakeHold: a lake-enabled table's log expires only below what its
// lake holds, and below the other rules' bound; a table without the lake
// keeps that bound.
func TestLakeHold(t *testing.T) {
	for _, tt := range []struct {
		expireBelow, lakeOffset int64
		enabled                 bool
		want                    int64
	}{
		{math.MaxInt64, 500, true, 500},
		{300, 500, true, 300},
		{math.MaxInt64, 0, true, 0},
		{math.MaxInt64, 500, false, math.MaxInt64},
		{300, 0, false, 300},
	} {
		if got := LakeHold(tt.expireBelow, tt.enabled, tt.lakeOffset); got != tt.want {
			t.Errorf("LakeHold(%d, %v, %d) = %d, want %d", tt.expireBelow, tt.enabled, tt.lakeOffset, got, tt.want)
		}
	}
}
