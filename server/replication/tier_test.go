package replication

import (
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
