package replication

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const lagMax = 10 * time.Second

// leaderOf returns node 1 leading epoch 1 of a bucket replicated on 1, 2, 3
// with the given ISR, its log durable up to end.
func leaderOf(t *testing.T, isr []uint32, end int64) *Bucket {
	t.Helper()
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 2}, Log{DurableEnd: end, LatestEpoch: 0})
	eff := b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1, 2, 3}, ISR: isr}, end, t0)
	if !eff.StartEpoch || !eff.RoleChanged {
		t.Fatalf("becoming leader: effects %+v", eff)
	}
	return b
}

// fetch has follower id fetch at offset in the leader's epoch, with a
// leader log written up to written and whose epochs are all epoch 1.
func fetch(t *testing.T, b *Bucket, id uint32, offset, written int64, now time.Time) (FetchAnswer, Effects) {
	t.Helper()
	ans, eff, err := b.ServeFetch(FollowerFetch{Follower: id, LeaderEpoch: b.leaderEpoch, Offset: offset, LastFetchedEpoch: 1},
		LeaderLog{WrittenEnd: written, EpochEnd: oneEpoch(1, written)}, now)
	if err != nil {
		t.Fatalf("fetch of %d at %d: %v", id, offset, err)
	}
	return ans, eff
}

// oneEpoch is an epoch cache holding epoch from offset 0 to end.
func oneEpoch(epoch int32, end int64) func(int32) (int32, int64, bool) {
	return func(e int32) (int32, int64, bool) {
		if e < epoch {
			return 0, 0, false
		}
		return epoch, end, true
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}

func wantHW(t *testing.T, b *Bucket, hw int64) {
	t.Helper()
	if b.HW() != hw {
		t.Fatalf("high watermark %d, want %d (%v)", b.HW(), hw, b)
	}
}

// mustPanicInvariant runs f and fails unless it panics with an
// InvariantError.
func mustPanicInvariant(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if _, ok := r.(*InvariantError); !ok {
			t.Fatalf("want an InvariantError panic, got %v", r)
		}
	}()
	f()
}
