package metastate

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// withUnclean is b with its unclean election count set.
func withUnclean(b *pb.BucketRecord, n int32) *pb.BucketRecord {
	b.UncleanElections = n
	return b
}

func TestElectBucket(t *testing.T) {
	r := []uint32{1, 2, 3}
	const (
		alreadyLed = pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS
		noReplica  = pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS
	)
	tests := []struct {
		name        string
		b           *pb.BucketRecord
		live        []uint32
		unclean     bool
		want        *pb.BucketRecord // nil: refused
		wantUnclean bool
		wantCode    pb.ErrorCode
	}{
		{"clean: offline, an ISR member back", bk(r, 0, []uint32{1, 2}, 4, 6), []uint32{2, 3}, false, bk(r, 2, []uint32{2}, 5, 7), false, 0},
		{"clean: leadership back to the preferred replica", bk(r, 2, r, 1, 1), r, false, bk(r, 1, r, 2, 2), false, 0},
		{"clean: a dead leader not yet fenced", bk(r, 1, r, 1, 1), []uint32{2, 3}, false, bk(r, 2, []uint32{2, 3}, 2, 2), false, 0},
		{"clean: already led by the preferred replica", bk(r, 1, r, 1, 1), r, false, nil, false, alreadyLed},
		{"clean: already led, the preferred replica dead", bk(r, 2, r, 1, 1), []uint32{2, 3}, false, nil, false, alreadyLed},
		{"clean: no live ISR member", bk(r, 0, []uint32{1}, 3, 3), []uint32{2, 3}, false, nil, false, noReplica},
		{"clean: empty ISR", bk(r, 0, nil, 3, 3), r, false, nil, false, noReplica},
		{"unclean: empty ISR", bk(r, 0, nil, 3, 5), []uint32{2, 3}, true, withUnclean(bk(r, 2, []uint32{2}, 4, 6), 1), true, 0},
		{"unclean: the wiped replica is live too", bk(r, 0, nil, 3, 5), r, true, withUnclean(bk(r, 1, []uint32{1}, 4, 6), 1), true, 0},
		{"unclean: dead ISR member", bk(r, 0, []uint32{1}, 3, 3), []uint32{3}, true, withUnclean(bk(r, 3, []uint32{3}, 4, 4), 1), true, 0},
		{"unclean: counts add up", withUnclean(bk(r, 0, nil, 3, 3), 2), []uint32{3}, true, withUnclean(bk(r, 3, []uint32{3}, 4, 4), 3), true, 0},
		{"unclean: a live ISR member makes it clean", bk(r, 0, []uint32{1, 3}, 3, 3), []uint32{2, 3}, true, bk(r, 3, []uint32{3}, 4, 4), false, 0},
		{"unclean: already led", bk(r, 1, r, 1, 1), r, true, nil, false, alreadyLed},
		{"unclean: no live replica", bk(r, 0, nil, 3, 3), []uint32{7}, true, nil, false, noReplica},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := proto.CloneOf(tc.b)
			el, refusal := electBucket(b, func(id uint32) bool { return slices.Contains(tc.live, id) }, nil, tc.unclean, noLogs)
			unclean := el.unclean
			if tc.want == nil {
				if refusal == nil || refusal.Code != tc.wantCode || !proto.Equal(b, tc.b) {
					t.Fatalf("refusal %v, bucket %v; want %v and no change", refusal, b, tc.wantCode)
				}
				return
			}
			if refusal != nil || unclean != tc.wantUnclean || !proto.Equal(b, tc.want) {
				t.Fatalf("refusal %v, unclean %v, %v; want unclean %v, %v", refusal, unclean, b, tc.wantUnclean, tc.want)
			}
			checkBucketInvariants(t, b)
		})
	}
}

// noLogs knows no replica's log.
func noLogs(uint32) *pb.ReplicaLog { return nil }

// replicaLog is node id's log state of bucket 0: its latest leader epoch
// and its end.
func replicaLog(id uint32, epoch int32, end int64) *pb.ReplicaLog {
	return &pb.ReplicaLog{NodeId: id, LatestEpoch: epoch, EndOffset: end}
}

// knownLog is a ranked replica whose log is known.
func knownLog(id uint32, epoch int32, end int64) *pb.ElectionCandidate {
	return &pb.ElectionCandidate{NodeId: id, LogKnown: true, LatestEpoch: epoch, EndOffset: end}
}

// TestElectBucketUncleanRanksByLog: an unclean election picks the live
// replica with the longest log of the latest epoch, not the first in
// assignment order (rule "damage and the last copy" 2). Replicas 1, 2, 3
// in that order; the ISR's only member, 4, is dead.
func TestElectBucketUncleanRanksByLog(t *testing.T) {
	r := []uint32{1, 2, 3, 4}
	unknown := func(id uint32) *pb.ElectionCandidate { return &pb.ElectionCandidate{NodeId: id} }
	tests := []struct {
		name     string
		live     []uint32
		logs     []*pb.ReplicaLog
		draining []uint32
		want     []*pb.ElectionCandidate // ranked; the first leads
	}{
		{"the longest log of the latest epoch, not the first replica",
			[]uint32{1, 2, 3}, []*pb.ReplicaLog{replicaLog(1, 7, 900), replicaLog(2, 7, 1200), replicaLog(3, 6, 5000)}, nil,
			[]*pb.ElectionCandidate{knownLog(2, 7, 1200), knownLog(1, 7, 900), knownLog(3, 6, 5000)}},
		{"the epoch before the length: a cut replica of the latest epoch over a longer stale one",
			[]uint32{1, 2}, []*pb.ReplicaLog{replicaLog(1, 5, 9999), replicaLog(2, 6, 10)}, nil,
			[]*pb.ElectionCandidate{knownLog(2, 6, 10), knownLog(1, 5, 9999)}},
		{"equal logs: assignment order",
			[]uint32{1, 2, 3}, []*pb.ReplicaLog{replicaLog(3, 4, 100), replicaLog(2, 4, 100), replicaLog(1, 3, 100)}, nil,
			[]*pb.ElectionCandidate{knownLog(2, 4, 100), knownLog(3, 4, 100), knownLog(1, 3, 100)}},
		{"unknown after every known one, even an empty log",
			[]uint32{1, 2, 3}, []*pb.ReplicaLog{replicaLog(3, -1, 0)}, nil,
			[]*pb.ElectionCandidate{knownLog(3, -1, 0), unknown(1), unknown(2)}},
		{"all unknown: assignment order",
			[]uint32{2, 3}, nil, nil,
			[]*pb.ElectionCandidate{unknown(2), unknown(3)}},
		{"a dead replica's log does not count",
			[]uint32{1, 2}, []*pb.ReplicaLog{replicaLog(1, 2, 10), replicaLog(2, 2, 5), replicaLog(4, 9, 900)}, nil,
			[]*pb.ElectionCandidate{knownLog(1, 2, 10), knownLog(2, 2, 5)}},
		{"a draining replica last, as in every election",
			[]uint32{1, 2, 3}, []*pb.ReplicaLog{replicaLog(1, 7, 900), replicaLog(2, 7, 1200)}, []uint32{2},
			[]*pb.ElectionCandidate{knownLog(1, 7, 900), unknown(3), {NodeId: 2, LogKnown: true, LatestEpoch: 7, EndOffset: 1200, Draining: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := bk(r, 0, []uint32{4}, 8, 9)
			logs := func(id uint32) *pb.ReplicaLog {
				i := slices.IndexFunc(tc.logs, func(l *pb.ReplicaLog) bool { return l.GetNodeId() == id })
				if i < 0 {
					return nil
				}
				return tc.logs[i]
			}
			el, refusal := electBucket(b, func(id uint32) bool { return slices.Contains(tc.live, id) },
				func(id uint32) bool { return slices.Contains(tc.draining, id) }, true, logs)
			if refusal != nil {
				t.Fatal(refusal)
			}
			leader := tc.want[0].GetNodeId()
			want := withUnclean(bk(r, leader, []uint32{leader}, 9, 10), 1)
			if !el.unclean || !proto.Equal(b, want) {
				t.Fatalf("unclean %v, %v; want %v", el.unclean, b, want)
			}
			if !slices.EqualFunc(el.ranked, tc.want, func(x, y *pb.ElectionCandidate) bool { return proto.Equal(x, y) }) {
				t.Fatalf("ranked %v, want %v", el.ranked, tc.want)
			}
			checkBucketInvariants(t, b)
		})
	}
}

// TestElectLeadersCarriesReplicaLogs: the command's replica log states
// decide an unclean election, bucket by bucket, the result lists the
// ranking, and a command with states no proposer sends is refused.
func TestElectLeadersCarriesReplicaLogs(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 2, 3 })))
	r := []uint32{1, 2, 3}
	for bucket := range int32(2) {
		setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: bucket, Replicas: r, Isr: []uint32{3}, LeaderEpoch: 4, BucketEpoch: 4})
	}
	elect := func(logs ...*pb.ReplicaLog) *pb.Command {
		c := electLeaders(-1, true, 1, 2)
		c.GetElectLeaders().ReplicaLogs = logs
		return c
	}
	onBucket := func(bucket int32, l *pb.ReplicaLog) *pb.ReplicaLog {
		l.Bucket = bucket
		return l
	}

	wantRefused(t, h.apply(elect(replicaLog(1, 2, 10), replicaLog(1, 3, 20))), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "two log states", "node 1")
	wantRefused(t, h.apply(elect(replicaLog(1, -2, 10))), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "latest epoch -2")
	wantRefused(t, h.apply(elect(replicaLog(1, 2, -1))), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "end offset -1")
	tooMany := elect()
	for i := range MaxReplicaLogs + 1 {
		tooMany.GetElectLeaders().ReplicaLogs = append(tooMany.GetElectLeaders().ReplicaLogs, replicaLog(uint32(i), 0, 0))
	}
	wantRefused(t, h.apply(tooMany), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed")

	// Bucket 0: node 2 holds more of the same epoch; bucket 1: node 1
	// holds the later epoch, node 2's log is unknown.
	res := h.ok(elect(replicaLog(1, 3, 900), replicaLog(2, 3, 1200), onBucket(1, replicaLog(1, 3, 50))))
	got := res.GetElection().GetBuckets()
	want := []struct {
		leader uint32
		ranked []*pb.ElectionCandidate
	}{
		{2, []*pb.ElectionCandidate{knownLog(2, 3, 1200), knownLog(1, 3, 900)}},
		{1, []*pb.ElectionCandidate{knownLog(1, 3, 50), {NodeId: 2}}},
	}
	if len(got) != len(want) {
		t.Fatalf("result %v", res)
	}
	for i, w := range want {
		e := got[i]
		if !e.GetElected() || !e.GetUnclean() || e.GetBucket().GetLeader() != w.leader || h.bucket(1, int32(i)).GetLeader() != w.leader ||
			!slices.EqualFunc(e.GetCandidates(), w.ranked, func(x, y *pb.ElectionCandidate) bool { return proto.Equal(x, y) }) {
			t.Errorf("bucket %d: %v, want leader %d ranked %v", i, e, w.leader, w.ranked)
		}
	}
}

func TestElectLeaders(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 3, 3 })))
	r := []uint32{1, 2, 3}
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 1, Isr: r})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 0, LeaderEpoch: 2, BucketEpoch: 2})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 2, Replicas: r, Leader: 0, Isr: []uint32{1, 2}, LeaderEpoch: 1, BucketEpoch: 1})

	t.Run("refused", func(t *testing.T) {
		unknownDB := electLeaders(-1, false, r...)
		unknownDB.GetElectLeaders().Database = "nope"
		wantRefused(t, h.apply(unknownDB), pb.ErrorCode_ERROR_CODE_UNKNOWN_DATABASE, "nope")
		unknownTable := electLeaders(-1, false, r...)
		unknownTable.GetElectLeaders().Table = "nope"
		wantRefused(t, h.apply(unknownTable), pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "db.nope")
		wantRefused(t, h.apply(electLeaders(3, false, r...)), pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "no bucket 3")
		wantRefused(t, h.apply(electLeaders(0, false, r...)), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "db.t bucket 0", "node 1")
		wantRefused(t, h.apply(electLeaders(1, false, r...)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "db.t bucket 1", "unclean")
		// Nothing elected anywhere: refused with bucket 0's reason.
		wantRefused(t, h.apply(electLeaders(-1, false)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "bucket 0")
		tooMany := electLeaders(-1, true, make([]uint32, maxLiveNodes+1)...)
		wantRefused(t, h.apply(tooMany), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "exceed")
		if b := h.bucket(1, 1); b.GetLeader() != 0 || b.GetLeaderEpoch() != 2 {
			t.Fatalf("a refused election changed %v", b)
		}
	})

	t.Run("clean, whole table", func(t *testing.T) {
		res := h.ok(withID("clean", electLeaders(-1, false, 2, 3)))
		got := res.GetElection().GetBuckets()
		if len(got) != 3 {
			t.Fatalf("result %v", res)
		}
		want := []struct {
			elected bool
			code    pb.ErrorCode
			leader  uint32
		}{
			{true, 0, 2}, // node 1 is not live: leadership moves to 2
			{false, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, 0},
			{true, 0, 2},
		}
		for i, w := range want {
			e := got[i]
			if e.GetElected() != w.elected || e.GetCode() != w.code || e.GetUnclean() || e.GetBucket().GetLeader() != w.leader ||
				!proto.Equal(e.GetBucket(), h.bucket(1, int32(i))) {
				t.Errorf("bucket %d: %v, want elected %v code %v leader %d", i, e, w.elected, w.code, w.leader)
			}
		}
		if u := h.feedAt(h.index); len(u.GetBuckets()) != 2 {
			t.Errorf("feed %v", u)
		}
		// A retry of the same request gets the first result and changes nothing.
		before := rawDump(t, h.s)
		again := h.ok(withID("clean", electLeaders(-1, false, 2, 3)))
		if !proto.Equal(again, res) || rawDump(t, h.s) != before {
			t.Fatalf("retry: %v, want %v", again, res)
		}
	})

	t.Run("unclean", func(t *testing.T) {
		res := h.ok(electLeaders(1, true, 3))
		e := res.GetElection().GetBuckets()
		want := &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 3, Isr: []uint32{3}, LeaderEpoch: 3, BucketEpoch: 3, UncleanElections: 1}
		if len(e) != 1 || !e[0].GetElected() || !e[0].GetUnclean() || !proto.Equal(e[0].GetBucket(), want) || !proto.Equal(h.bucket(1, 1), want) {
			t.Fatalf("result %v, want %v", res, want)
		}
		// The count survives later changes of the bucket.
		h.ok(fenceNodes(3))
		if b := h.bucket(1, 1); b.GetLeader() != 0 || b.GetUncleanElections() != 1 {
			t.Fatalf("after a fence: %v", b)
		}
	})
}

// TestUncleanElectionAfterWipe: the offline bucket a wiped last in-sync
// replica leaves behind comes back only through an unclean election.
func TestUncleanElectionAfterWipe(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	setBucket(t, h.s, bk([]uint32{1, 2, 3}, 1, []uint32{1}, 4, 7))
	h.ok(registerIncarnation(1, "wiped"))
	wantRefused(t, h.apply(electLeaders(0, false, 1, 2, 3)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "no live in-sync replica")
	h.ok(electLeaders(0, true, 2, 3))
	want := withUnclean(bk([]uint32{1, 2, 3}, 2, []uint32{2}, 6, 9), 1)
	if b := h.bucket(1, 0); !proto.Equal(b, want) {
		t.Fatalf("%v, want %v", b, want)
	}
}

// TestElectLeadersNothingToDo: a whole-table election refused with
// ALREADY_EXISTS means every bucket is led by its first live in-sync
// replica (the CLI says "nothing to do"); a bucket that cannot get a
// leader is the refusal's reason even after one that is led already.
func TestElectLeadersNothingToDo(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 2, 3 })))
	r := []uint32{1, 2, 3}
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: r, Leader: 1, Isr: r})
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, Leader: 1, Isr: r})
	wantRefused(t, h.apply(electLeaders(-1, false, r...)), pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "bucket 0")
	setBucket(t, h.s, &pb.BucketRecord{TableId: 1, Bucket: 1, Replicas: r, LeaderEpoch: 1, BucketEpoch: 1})
	wantRefused(t, h.apply(electLeaders(-1, false, r...)), pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS, "bucket 1")
}
