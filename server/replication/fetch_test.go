package replication

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// docs/replication.md, follower fetch 2: an older leader epoch is fenced, a
// newer one unknown to this leader, a node that is not a replica refused.
func TestServeFetchChecksEpochs(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 10)
	l := LeaderLog{WrittenEnd: 10, EpochEnd: oneEpoch(1, 10)}
	for _, tc := range []struct {
		name string
		req  FollowerFetch
		want error
	}{
		{"older epoch", FollowerFetch{Follower: 2, LeaderEpoch: 0, Offset: 0, LastFetchedEpoch: -1}, ErrFenced},
		{"newer epoch", FollowerFetch{Follower: 2, LeaderEpoch: 2, Offset: 0, LastFetchedEpoch: -1}, ErrUnknownLeaderEpoch},
		{"not a replica", FollowerFetch{Follower: 9, LeaderEpoch: 1, Offset: 0, LastFetchedEpoch: -1}, ErrNotReplica},
		{"past the end", FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 11, LastFetchedEpoch: -1}, ErrOutOfRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := b.ServeFetch(tc.req, l, t0)
			wantErr(t, err, tc.want)
			if b.FollowerEnd(tc.req.Follower) != -1 {
				t.Fatal("a refused fetch was recorded")
			}
		})
	}
}

// docs/replication.md, follower fetch 2 (KIP-320): a follower whose last
// epoch ends earlier on the leader is told the leader's end of that epoch;
// it truncates to the smaller of that and its own end of the epoch.
func TestServeFetchReportsDivergence(t *testing.T) {
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 1}, Log{DurableEnd: 8, LatestEpoch: 2})
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 3, BucketEpoch: 3, Replicas: []uint32{1, 2}, ISR: []uint32{1, 2}}, 8, t0)
	// Leader log: epoch 1 at [0,4), epoch 3 at [4,8) (it never saw epoch 2).
	leaderEpochs := func(e int32) (int32, int64, bool) {
		switch {
		case e >= 3:
			return 3, 8, true
		case e >= 1:
			return 1, 4, true
		}
		return 0, 0, false
	}
	// The follower holds epoch 1 at [0,4) and epoch 2 at [4,6).
	ans, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 3, Offset: 6, LastFetchedEpoch: 2},
		LeaderLog{WrittenEnd: 8, EpochEnd: leaderEpochs}, t0)
	if err != nil || !ans.Diverging || ans.DivergingEpoch != 1 || ans.DivergingEnd != 4 {
		t.Fatalf("answer %+v, %v; want diverging at epoch 1, offset 4", ans, err)
	}
	followerEpochs := func(e int32) (int32, int64, bool) {
		switch {
		case e >= 2:
			return 2, 6, true
		case e >= 1:
			return 1, 4, true
		}
		return 0, 0, false
	}
	if to := TruncationPoint(ans.DivergingEpoch, ans.DivergingEnd, followerEpochs); to != 4 {
		t.Fatalf("truncation point %d, want 4", to)
	}
	// The follower's own end of the epoch is earlier: it truncates there.
	short := func(int32) (int32, int64, bool) { return 1, 3, true }
	if to := TruncationPoint(1, 4, short); to != 3 {
		t.Fatalf("truncation point %d, want 3", to)
	}
	if b.FollowerEnd(2) != -1 {
		t.Fatal("a diverging follower's end was counted")
	}
}

// docs/replication.md, follower fetch 3–5: HW = minimum durable end over the
// ISR, the leader's included; a member that has not fetched in this epoch
// holds it; it never moves back.
func TestHighWatermark(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 0)
	b.DurableEnd(10)
	fetch(t, b, 2, 10, 10, t0)
	wantHW(t, b, 0) // 3 has not fetched in this epoch
	fetch(t, b, 3, 6, 10, t0)
	wantHW(t, b, 6)
	fetch(t, b, 3, 10, 12, t0) // the leader wrote to 12 but synced to 10
	wantHW(t, b, 10)
	b.DurableEnd(12)
	wantHW(t, b, 10)
	fetch(t, b, 2, 12, 12, t0)
	fetch(t, b, 3, 12, 12, t0)
	wantHW(t, b, 12)
	// A follower that truncated and fetches lower does not move it back.
	fetch(t, b, 3, 4, 12, t0)
	wantHW(t, b, 12)
	// A new leader epoch: the HW waits for fetches in the new epoch.
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 2, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2, 3}}, 12, t0)
	b.DurableEnd(14)
	wantHW(t, b, 12)
	if b.FollowerEnd(2) != -1 {
		t.Fatal("follower progress survived a new epoch")
	}
}

// docs/replication.md, ISR changes 1 (issue 11, bug 10): a follower one
// batch behind a leader that keeps writing is caught up when it fetches at
// the leader's end as of its previous fetch; the ISR does not flap.
func TestCaughtUpUnderSustainedLoad(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 0)
	end := int64(0)
	now := t0
	for i := range 100 {
		// Every fetch, the leader has written one more batch than the
		// follower had when it sent the fetch.
		end += 10
		b.DurableEnd(end)
		fetch(t, b, 2, end-10, end, now)
		fetch(t, b, 3, end-10, end, now)
		now = now.Add(time.Second)
		if eff := b.Tick(now); eff.Propose != nil {
			t.Fatalf("round %d: proposed %v for followers one batch behind", i, eff.Propose)
		}
	}
	// A follower that stays behind the leader's previous end is lagging.
	stuck := int64(end - 10)
	for range 15 {
		end += 10
		b.DurableEnd(end)
		fetch(t, b, 2, end-10, end, now)
		fetch(t, b, 3, stuck, end, now)
		now = now.Add(time.Second)
	}
	eff := b.Tick(now)
	if eff.Propose == nil || len(eff.Propose.ISR) != 2 || eff.Propose.ISR[1] != 2 {
		t.Fatalf("lagging follower 3 not proposed out: %+v", eff.Propose)
	}
}

// docs/replication.md, ISR changes 1 (issue 11, bug 6, KAFKA-7128): a
// follower is proposed into the ISR only once its end reaches both the HW
// and the start of the current leader epoch.
func TestExpansionNeedsEpochStart(t *testing.T) {
	// Node 1 becomes leader of epoch 2 at offset 20 with a HW of 12 carried
	// over; follower 3 is in the ISR but has not fetched in the new epoch
	// (so the HW stays at 12), follower 2 is out of the ISR.
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 1}, Log{HWCheckpoint: 12, DurableEnd: 20, LatestEpoch: 1})
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 2, BucketEpoch: 5, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 3}}, 20, t0)
	wantHW(t, b, 12)
	if e := b.EpochStart(); e != 20 {
		t.Fatalf("epoch start %d", e)
	}
	epochs := func(e int32) (int32, int64, bool) { return min(e, 2), 20, true }
	// Follower 2 at 15 reached the HW but not the epoch start: its log
	// past 12 may hold an epoch-1 tail this leader does not have.
	_, eff, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 2, Offset: 15, LastFetchedEpoch: 1},
		LeaderLog{WrittenEnd: 20, EpochEnd: epochs}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if eff.Propose != nil {
		t.Fatalf("follower below the epoch start proposed into the ISR: %v", eff.Propose)
	}
	_, eff, _ = b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 2, Offset: 20, LastFetchedEpoch: 1},
		LeaderLog{WrittenEnd: 20, EpochEnd: epochs}, t0)
	if eff.Propose == nil || len(eff.Propose.ISR) != 3 {
		t.Fatalf("caught-up follower not proposed: %+v", eff)
	}
}

// docs/replication.md, ISR changes 2 (issue 11, bug 5): until the outcome of
// a proposal is known, the HW counts the larger ISR; an unknown outcome is
// retried with the same proposal (same key, so the same request id);
// metadata at the proposal's own bucket epoch tells nothing; a later bucket
// epoch resolves it.
func TestProposalOutcomeUnknownKeepsLargerISR(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 0)
	b.DurableEnd(10)
	fetch(t, b, 2, 10, 10, t0)
	wantHW(t, b, 10)
	_, eff := fetch(t, b, 3, 10, 10, t0) // 3 caught up: proposed in
	p := eff.Propose
	if p == nil || len(p.ISR) != 3 {
		t.Fatalf("expansion not proposed: %+v", eff)
	}
	key := p.Key()
	b.DurableEnd(20)
	fetch(t, b, 2, 20, 20, t0)
	wantHW(t, b, 10) // 3 counts while its addition is pending
	now := t0.Add(time.Second)
	b.ProposalOutcome(p.ID, Unknown, nil, now)
	wantHW(t, b, 10)
	// Metadata at the bucket epoch the proposal was made at says nothing.
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, 20, now)
	if b.Pending() == nil {
		t.Fatal("an equal-epoch image cleared the pending proposal")
	}
	wantHW(t, b, 10)
	retry := b.Tick(now.Add(5 * time.Second)).Propose
	if retry == nil || retry.Key() != key || retry.ID != p.ID || retry.Attempts != 2 {
		t.Fatalf("retry %+v, want the same proposal %v", retry, p)
	}
	// A duplicated, late answer of the first attempt: Unknown again.
	b.ProposalOutcome(p.ID, Unknown, nil, now)
	// The metadata stream shows the expansion committed.
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2, 3}}, 20, now)
	if b.Pending() != nil {
		t.Fatal("a later bucket epoch left the proposal pending")
	}
	// The answer to the retry arrives after: nothing changes.
	if eff := b.ProposalOutcome(p.ID, Refused, nil, now); eff != (Effects{}) {
		t.Fatalf("outcome of a resolved proposal: %+v", eff)
	}
	wantHW(t, b, 10)
	fetch(t, b, 3, 20, 20, now)
	wantHW(t, b, 20)
}

// docs/replication.md, ISR changes 2: FENCED tells nothing of a
// proposal's fate, so the larger ISR keeps counting until the metadata
// shows the bucket; taken as a refusal, the HW would pass the added member
// while the controller holds it in the ISR and may elect it. A retry after
// an unknown outcome is fenced when the controller no longer remembers the
// request id and the first attempt did commit; so is a proposal the leader
// sent once, when the transport retried it under its id (found by the
// simulation at seed 16513).
func TestFencedKeepsLargerISR(t *testing.T) {
	for _, retried := range []bool{false, true} {
		t.Run(fmt.Sprintf("retried=%v", retried), func(t *testing.T) {
			b := leaderOf(t, []uint32{1, 2}, 0)
			b.DurableEnd(10)
			fetch(t, b, 2, 10, 10, t0)
			_, eff := fetch(t, b, 3, 10, 10, t0) // 3 caught up: proposed in
			p := eff.Propose
			if p == nil || len(p.ISR) != 3 {
				t.Fatalf("expansion not proposed: %+v", eff)
			}
			now := t0.Add(time.Second)
			if retried {
				b.ProposalOutcome(p.ID, Unknown, nil, now)
				retry := b.Tick(now.Add(5 * time.Second)).Propose
				if retry == nil || retry.ID != p.ID || retry.Attempts != 2 {
					t.Fatalf("retry %+v, want the same proposal %v", retry, p)
				}
			}
			b.ProposalOutcome(p.ID, Fenced, nil, now)
			if b.Pending() == nil {
				t.Fatal("a FENCED answer cleared the proposal: another attempt or copy of it may have committed")
			}
			b.DurableEnd(20)
			fetch(t, b, 2, 20, 20, now)
			wantHW(t, b, 10) // 3 still counts
			// The metadata stream shows the expansion committed.
			b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2, 3}}, 20, now)
			if b.Pending() != nil {
				t.Fatal("a later bucket epoch left the proposal pending")
			}
			wantHW(t, b, 10)
			fetch(t, b, 3, 20, 20, now)
			wantHW(t, b, 20)
		})
	}
}

// docs/replication.md, ISR changes 2: a refusal (the controller saw the
// bucket at the proposal's epochs) clears the proposal at once, so the HW
// stops waiting for the member it would have added.
func TestRefusedExpansionStopsCountingMember(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 0)
	b.DurableEnd(10)
	fetch(t, b, 2, 10, 10, t0)
	_, eff := fetch(t, b, 3, 10, 10, t0)
	if eff.Propose == nil {
		t.Fatal("expansion not proposed")
	}
	b.DurableEnd(20)
	fetch(t, b, 2, 20, 20, t0)
	wantHW(t, b, 10)
	b.ProposalOutcome(eff.Propose.ID, Refused, nil, t0)
	if b.Pending() != nil {
		t.Fatal("a refused proposal is still pending")
	}
	wantHW(t, b, 20)
}

// docs/replication.md, ISR changes 2: a shrink takes effect only once
// committed.
func TestShrinkCountsOldISRUntilCommitted(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 0)
	b.DurableEnd(10)
	fetch(t, b, 2, 10, 10, t0)
	fetch(t, b, 3, 5, 10, t0)
	wantHW(t, b, 5)
	now := t0.Add(lagMax + time.Second)
	fetch(t, b, 2, 10, 10, now)
	p := b.Tick(now).Propose
	if p == nil || len(p.ISR) != 2 {
		t.Fatalf("shrink not proposed: %v", p)
	}
	wantHW(t, b, 5)
	b.ProposalOutcome(p.ID, Refused, nil, now)
	wantHW(t, b, 5)
	if b.Pending() != nil {
		t.Fatal("refused proposal still pending")
	}
	p = b.Tick(now).Propose
	b.ProposalOutcome(p.ID, Committed, &Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 2, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, now)
	wantHW(t, b, 10)
}

// Issue 11, bug 11: a consumer reading above a new leader's lagging HW but
// within its log waits (an empty answer), instead of OUT_OF_RANGE.
func TestConsumerAboveLaggingHW(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 20) // HW 0 until follower 2 fetches
	for _, tc := range []struct {
		offset   int64
		from, to int64
		err      error
	}{
		{offset: 15, from: 15, to: 15},
		{offset: 20, from: 20, to: 20},
		{offset: 21, err: ErrOutOfRange},
	} {
		from, to, err := b.ConsumerRange(tc.offset, 0, 20)
		if tc.err != nil {
			wantErr(t, err, tc.err)
			continue
		}
		if err != nil || from != tc.from || to != tc.to {
			t.Fatalf("offset %d: [%d, %d) %v", tc.offset, from, to, err)
		}
	}
	fetch(t, b, 2, 20, 20, t0)
	if from, to, err := b.ConsumerRange(15, 0, 20); err != nil || from != 15 || to != 20 {
		t.Fatalf("after the HW moved: [%d, %d) %v", from, to, err)
	}
}

// Issue 11 (a wiped or restarted follower): a fetch carries the follower's
// node epoch. A newer one than the leader has seen restarts the follower's
// progress; an older one is a late fetch of the earlier run, from an end
// its log may no longer hold (a wiped disk), and is fenced: counting it
// would let the high watermark pass an empty replica.
func TestFetchOfAnEarlierStart(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2}, 10)
	l := LeaderLog{WrittenEnd: 10, EpochEnd: oneEpoch(1, 10)}
	at := func(offset, nodeEpoch int64, last int32) FollowerFetch {
		return FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: offset, LastFetchedEpoch: last, NodeEpoch: nodeEpoch}
	}
	if _, _, err := b.ServeFetch(at(4, 5, 1), l, t0); err != nil {
		t.Fatal(err)
	}
	wantHW(t, b, 4)
	// Node 2 is wiped and registers again at 8; its first fetch is at 0.
	if _, _, err := b.ServeFetch(at(0, 8, -1), l, t0); err != nil {
		t.Fatal(err)
	}
	if end := b.FollowerEnd(2); end != 0 {
		t.Fatalf("follower end %d after a fetch of a new registration at 0", end)
	}
	// A fetch the earlier run sent at 10 arrives late: fenced, not counted.
	_, _, err := b.ServeFetch(at(10, 5, 1), l, t0)
	wantErr(t, err, ErrFenced)
	if end := b.FollowerEnd(2); end != 0 {
		t.Fatalf("follower end %d after a late fetch of an earlier run", end)
	}
	wantHW(t, b, 4)
	// Fetches without a node epoch are not checked.
	if _, _, err := b.ServeFetch(at(10, 0, 1), l, t0); err != nil {
		t.Fatal(err)
	}
	wantHW(t, b, 10)
}

// KIP-903 (issue 11, a wiped follower proposed into the ISR): a proposal
// carries the node epochs of its members as the leader knows them, and
// they are part of its key, so the controller can refuse a member that
// registered again since the fetches that made it eligible, and a proposal
// for the same ISR after that registration is another request.
func TestProposalCarriesNodeEpochs(t *testing.T) {
	b := New(Config{Self: 1, ReplicaLagMax: lagMax, MinISR: 1, NodeEpoch: 3}, Log{DurableEnd: 10, LatestEpoch: 0})
	b.Assign(Assignment{Leader: 1, LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{1, 2, 3}, ISR: []uint32{1, 2}}, 10, t0)
	l := LeaderLog{WrittenEnd: 10, EpochEnd: oneEpoch(1, 10)}
	serve := func(id uint32, nodeEpoch int64) Effects {
		t.Helper()
		_, eff, err := b.ServeFetch(FollowerFetch{Follower: id, LeaderEpoch: 1, Offset: 10, LastFetchedEpoch: 1, NodeEpoch: nodeEpoch}, l, t0)
		if err != nil {
			t.Fatal(err)
		}
		return eff
	}
	serve(2, 4)
	p := serve(3, 6).Propose
	if p == nil || !slices.Equal(p.ISR, []uint32{1, 2, 3}) {
		t.Fatalf("follower 3 not proposed in: %v", p)
	}
	if !slices.Equal(p.NodeEpochs, []int64{3, 4, 6}) {
		t.Fatalf("proposal node epochs %v, want [3 4 6]", p.NodeEpochs)
	}
	key := p.Key()
	b.ProposalOutcome(p.ID, Refused, nil, t0) // node 3 registered again at 9
	p = serve(3, 9).Propose
	if p == nil || !slices.Equal(p.NodeEpochs, []int64{3, 4, 9}) || p.Key() == key {
		t.Fatalf("proposal after node 3's new registration: %v (key %q, was %q)", p, p.Key(), key)
	}
}

// A follower whose fetch offset is below the leader's log start is out of
// range, whatever epoch it names: the leader's epoch cache starts at its
// log start and cannot judge divergence there (it would answer with its
// start as the divergence point, which the follower cannot truncate to,
// again and again). The follower catches up from remote storage instead.
func TestServeFetchBelowLeaderStart(t *testing.T) {
	b := leaderOf(t, []uint32{1, 2, 3}, 100)
	unknown := func(int32) (int32, int64, bool) { return 0, 0, false } // the cache starts at 50
	l := LeaderLog{StartOffset: 50, WrittenEnd: 100, EpochEnd: unknown}
	for _, last := range []int32{-1, 0, 1} {
		_, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 20, LastFetchedEpoch: last}, l, t0)
		wantErr(t, err, ErrOutOfRange)
		if b.FollowerEnd(2) != -1 {
			t.Fatal("a fetch below the leader's start was recorded as the follower's end")
		}
	}
}

// docs/replication.md, follower fetch 2c: a follower whose last epoch is
// older than any the leader's log holds is told to diverge at the
// leader's start even when it ends there, whatever the remote log holds:
// the leader's epoch cache starts at its log start and cannot say the
// follower's batches below are its history (they may be of one an
// unclean election replaced). The follower then has the remote log judge
// them (UnjudgedBelowStart).
func TestServeFetchUnjudgedBelowLeaderStart(t *testing.T) {
	// The leader's log starts at 20 in epoch 2 (what it held of epoch 1
	// and the first offsets of epoch 2 went to retention).
	epochs := func(e int32) (int32, int64, bool) {
		if e >= 2 {
			return 2, 30, true
		}
		return e, 20, true // older than all: ends where the cache starts
	}
	for _, tc := range []struct {
		name   string
		remote RemoteView
		offset int64
	}{
		{"at the start, the remote log holds below it", RemoteView{Start: 0, CoveredFrom: 0, End: 24}, 20},
		{"past the start, the remote log holds below it", RemoteView{Start: 0, CoveredFrom: 0, End: 24}, 23},
		{"at the start, fenced remote log", RemoteView{Fenced: true}, 20},
		{"at the start, the remote log ends below it", RemoteView{End: 16}, 20},
		{"at the start, the remote log has a gap", RemoteView{Start: 0, CoveredFrom: 12, End: 24}, 20},
		{"at the start, no remote log", RemoteView{}, 20},
		{"past the start, the remote log ends below it", RemoteView{End: 16}, 23},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := leaderOf(t, []uint32{1, 2}, 30)
			l := LeaderLog{StartOffset: 20, WrittenEnd: 30, EpochEnd: epochs, OldestEpoch: 2, Remote: tc.remote}
			ans, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: tc.offset, LastFetchedEpoch: 1}, l, t0)
			if err != nil || !ans.Diverging {
				t.Fatalf("answer %+v, %v; want a divergence", ans, err)
			}
			if ans.DivergingEpoch != 1 || ans.DivergingEnd != 20 {
				t.Fatalf("diverging at epoch %d, offset %d; want epoch 1 at the leader's start 20", ans.DivergingEpoch, ans.DivergingEnd)
			}
			// The follower holds epoch 1 over [8, offset): it truncates
			// to the leader's start, which leaves it batches there only
			// the remote log can judge.
			to := TruncationPoint(ans.DivergingEpoch, ans.DivergingEnd, func(int32) (int32, int64, bool) { return 1, tc.offset, true })
			if to != 20 {
				t.Fatalf("truncation point %d, want 20", to)
			}
			if !UnjudgedBelowStart(ans.DivergingEnd, 20, 8, to) {
				t.Fatal("batches below the leader's start were not sent to the remote log")
			}
			if UnjudgedBelowStart(ans.DivergingEnd, 20, 20, to) {
				t.Fatal("a follower holding nothing below the leader's start was sent to the remote log")
			}
		})
	}
	// A follower whose last epoch the leader's log holds is judged as
	// usual (KIP-320), at its start too.
	b := leaderOf(t, []uint32{1, 2}, 30)
	l := LeaderLog{StartOffset: 20, WrittenEnd: 30, EpochEnd: epochs, OldestEpoch: 2}
	if ans, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 25, LastFetchedEpoch: 2}, l, t0); err != nil || ans.Diverging {
		t.Fatalf("a follower in the leader's epoch: %+v, %v", ans, err)
	}
}

// docs/replication.md, follower fetch 2d: an empty follower positioned
// past the leader's start (it holds nothing below its position) counts as
// caught up only when what lies between is held for good without the
// leader: by the remote log, or by a KV snapshot at or past its position.
// Else, outside the ISR, it is told to start over at the leader's start
// (tier simulation seed 3568: such a replica joined the ISR, was elected
// and lacked acknowledged records only the old leader held).
func TestServeFetchEmptyFollowerPastLeaderStart(t *testing.T) {
	epochs := func(e int32) (int32, int64, bool) { return 2, 30, e >= 2 }
	for _, tc := range []struct {
		name      string
		remote    RemoteView
		snapshot  int64
		offset    int64
		diverging bool
	}{
		{"at the leader's start", RemoteView{}, 0, 20, false},
		{"past it, nothing holds what lies between", RemoteView{}, 0, 25, true},
		{"past it, the remote log holds it", RemoteView{Start: 0, CoveredFrom: 0, End: 25}, 0, 25, false},
		{"past it, the remote log ends below its position", RemoteView{Start: 0, CoveredFrom: 0, End: 24}, 0, 25, true},
		{"past it, the remote log starts past the leader's start", RemoteView{Start: 22, CoveredFrom: 22, End: 28}, 0, 25, true},
		{"past it, fenced remote log", RemoteView{Start: 0, CoveredFrom: 0, End: 28, Fenced: true}, 0, 25, true},
		{"past it, restored from a KV snapshot there", RemoteView{}, 25, 25, false},
		{"past it, a KV snapshot below its position", RemoteView{}, 24, 25, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := leaderOf(t, []uint32{1, 2}, 30)
			l := LeaderLog{StartOffset: 20, WrittenEnd: 30, EpochEnd: epochs, OldestEpoch: 2, Remote: tc.remote, SnapshotOffset: tc.snapshot}
			ans, _, err := b.ServeFetch(FollowerFetch{Follower: 3, LeaderEpoch: 1, Offset: tc.offset, LastFetchedEpoch: -1}, l, t0)
			if err != nil || ans.Diverging != tc.diverging {
				t.Fatalf("answer %+v, %v; want diverging %v", ans, err, tc.diverging)
			}
			if tc.diverging && ans.DivergingEnd != 20 {
				t.Fatalf("diverging at %d, want the leader's start 20", ans.DivergingEnd)
			}
			if tc.diverging {
				// An empty log truncated below its start starts over there.
				if to := TruncationPoint(ans.DivergingEpoch, ans.DivergingEnd, func(int32) (int32, int64, bool) { return 0, 0, false }); to != 20 {
					t.Fatalf("truncation point %d, want 20", to)
				}
			}
		})
	}
	// A member of the ISR (emptied by a truncation to its log start,
	// which retention had moved up) keeps its place: starting over would
	// take its end below the high watermark (tier simulation seed 6755).
	b := leaderOf(t, []uint32{1, 2}, 30)
	l := LeaderLog{StartOffset: 20, WrittenEnd: 30, EpochEnd: epochs, OldestEpoch: 2}
	if ans, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: 25, LastFetchedEpoch: -1}, l, t0); err != nil || ans.Diverging {
		t.Fatalf("an in-sync follower: %+v, %v", ans, err)
	}
}

// The newest KV snapshot vouches for a follower's batches below its
// leader's start when the leader of the follower's last epoch took it at
// or past the follower's end (follower fetch 2e): a leader restored from
// it leads a log that starts there with a newer epoch, and a follower
// still holding the changelog in a gap of the remote log keeps it instead
// of dropping it (integration TestRestoredLeaderKeepsRemoteStart).
func TestServeFetchSnapshotVouchesBelowLeaderStart(t *testing.T) {
	// The leader restored from the snapshot at 50 and leads in epoch 3.
	epochs := func(e int32) (int32, int64, bool) { return 3, 60, e >= 3 }
	gap := RemoteView{Start: 0, CoveredFrom: 0, End: 45}
	for _, tc := range []struct {
		name      string
		remote    RemoteView
		epoch     int32 // the snapshot taker's
		offset    int64 // the follower's end
		last      int32 // its last batch's epoch
		diverging bool
	}{
		{"taken by the leader of the follower's last epoch at its end", gap, 1, 50, 1, false},
		{"taken in another epoch", gap, 2, 50, 1, true},
		{"the remote log is fenced", RemoteView{Start: 0, CoveredFrom: 0, End: 45, Fenced: true}, 1, 50, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := leaderOf(t, []uint32{1, 2}, 60)
			l := LeaderLog{StartOffset: 50, WrittenEnd: 60, EpochEnd: epochs, OldestEpoch: 3, Remote: tc.remote,
				SnapshotOffset: 50, SnapshotEpoch: tc.epoch}
			ans, _, err := b.ServeFetch(FollowerFetch{Follower: 2, LeaderEpoch: 1, Offset: tc.offset, LastFetchedEpoch: tc.last}, l, t0)
			if err != nil || ans.Diverging != tc.diverging {
				t.Fatalf("answer %+v, %v; want diverging %v", ans, err, tc.diverging)
			}
			if tc.diverging && ans.DivergingEnd != 50 {
				t.Fatalf("diverging at %d, want the leader's start 50", ans.DivergingEnd)
			}
		})
	}
}

// A follower whose batches below its leader's start the remote log judged
// drops them only when no copy is lost: the remote log holds every one up
// to the leader's start, or a primary-key table's newest KV snapshot
// covers those it does not.
func TestMayDropBelowStart(t *testing.T) {
	v := RemoteView{Start: 40, CoveredFrom: 40, End: 80}
	gap := RemoteView{Start: 10, CoveredFrom: 60, End: 80}
	for _, tc := range []struct {
		name     string
		start    int64
		leader   int64
		v        RemoteView
		pk       bool
		snapshot int64
		want     bool
	}{
		{"the remote log holds them", 40, 70, v, false, 0, true},
		{"some below the remote start", 10, 70, v, false, 0, false},
		{"the remote log ends below the leader's start", 40, 90, v, false, 0, false},
		{"primary key, below the remote start, no snapshot past it", 10, 70, v, true, 30, false},
		{"primary key, below the remote start and a snapshot", 10, 70, v, true, 50, true},
		{"primary key, a snapshot at the leader's start", 10, 90, v, true, 90, true},
		{"some in the remote log's gap", 40, 70, gap, false, 0, false},
		{"above the remote log's gap", 60, 70, gap, false, 0, true},
		{"no remote log", 10, 70, RemoteView{}, false, 0, false},
		{"fenced", 40, 70, RemoteView{Start: 40, CoveredFrom: 40, End: 80, Fenced: true}, false, 0, false},
	} {
		if got := MayDropBelowStart(tc.start, tc.leader, tc.v, tc.pk, tc.snapshot); got != tc.want {
			t.Errorf("%s: MayDropBelowStart = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The remote log judges a follower's batches where it holds them, gaps
// and all: the first offset both hold in different epochs.
func TestRemoteDisagreement(t *testing.T) {
	remote := []EpochSpan{{Epoch: 1, Start: 10, End: 30}, {Epoch: 3, Start: 30, End: 40}, {Epoch: 5, Start: 50, End: 60}}
	for _, tc := range []struct {
		name       string
		local      []EpochSpan
		start, end int64
		want       int64
		ok         bool
	}{
		{"agrees", []EpochSpan{{1, 20, 30}, {3, 30, 40}}, 20, 40, 0, false},
		{"another epoch where the remote log holds one", []EpochSpan{{1, 20, 34}}, 20, 34, 30, true},
		{"in the gap and past the end it cannot judge", []EpochSpan{{3, 35, 40}, {4, 40, 50}}, 35, 50, 0, false},
		{"after the gap", []EpochSpan{{4, 40, 55}}, 40, 55, 50, true},
		{"below the remote start it cannot judge", []EpochSpan{{0, 0, 10}, {1, 10, 12}}, 0, 12, 0, false},
		{"past the remote end", []EpochSpan{{5, 50, 70}}, 50, 70, 0, false},
	} {
		got, ok := RemoteDisagreement(remote, tc.local, tc.start, tc.end)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: RemoteDisagreement = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
