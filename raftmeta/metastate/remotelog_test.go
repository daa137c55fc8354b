package metastate

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

func commitRemote(b *pb.BucketRecord, leader uint32, expected int64, start, end int64) *pb.Command {
	return &pb.Command{Op: &pb.Command_CommitRemoteLog{CommitRemoteLog: &pb.CommitRemoteLog{
		TableId: b.GetTableId(), Bucket: b.GetBucket(), LeaderId: leader, LeaderEpoch: b.GetLeaderEpoch(),
		ExpectedVersion: expected,
		RemoteLog:       &pb.RemoteLog{ManifestKey: "m/1", StartOffset: start, EndOffset: end, Segments: 1, Bytes: 10},
	}}}
}

func TestCommitRemoteLog(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	b := h.bucket(1, 0)
	res := h.ok(withID("c1", commitRemote(b, 1, 0, 0, 100)))
	got := res.GetBucket().GetRemoteLog()
	if got.GetVersion() != 1 || got.GetEndOffset() != 100 || got.GetLeaderEpoch() != b.GetLeaderEpoch() {
		t.Fatalf("committed %v", got)
	}
	after := h.bucket(1, 0)
	if after.GetBucketEpoch() != b.GetBucketEpoch() || after.GetLeaderEpoch() != b.GetLeaderEpoch() {
		t.Fatalf("epochs moved: %v → %v", b, after)
	}
	if u := h.feedAt(h.index); u == nil || len(u.GetBuckets()) != 1 || u.GetBuckets()[0].GetRemoteLog().GetVersion() != 1 {
		t.Fatalf("the commit is not in the feed: %v", u)
	}
	// A retry of the same request is the first result, not a FENCED
	// for the version it raised.
	if again := h.apply(withID("c1", commitRemote(b, 1, 0, 0, 100))); !proto.Equal(again.GetBucket(), res.GetBucket()) {
		t.Fatalf("retry answered %v", again)
	}
	h.ok(commitRemote(b, 1, 1, 50, 200))
	if rl := h.bucket(1, 0).GetRemoteLog(); rl.GetVersion() != 2 || rl.GetStartOffset() != 50 || rl.GetEndOffset() != 200 {
		t.Fatalf("second commit %v", rl)
	}
}

func TestCommitRemoteLogRefused(t *testing.T) {
	const (
		fenced  = pb.ErrorCode_ERROR_CODE_FENCED
		invalid = pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
		unknown = pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE
	)
	cur := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: []uint32{2, 1, 3}, Leader: 2, LeaderEpoch: 4,
		Isr: []uint32{2, 3}, BucketEpoch: 7,
		RemoteLog: &pb.RemoteLog{ManifestKey: "m/old", StartOffset: 100, EndOffset: 500, Version: 3, LeaderEpoch: 4}}
	req := func(edit func(c *pb.CommitRemoteLog)) *pb.Command {
		cmd := commitRemote(cur, 2, 3, 100, 800)
		edit(cmd.GetCommitRemoteLog())
		return cmd
	}
	tests := []struct {
		name string
		cmd  *pb.Command
		code pb.ErrorCode
		want []string
	}{
		{"unknown bucket", req(func(c *pb.CommitRemoteLog) { c.Bucket = 5 }), unknown, []string{"no bucket 5"}},
		{"not the leader", req(func(c *pb.CommitRemoteLog) { c.LeaderId = 3 }), fenced, []string{"node 3 is not the leader"}},
		{"deposed leader epoch", req(func(c *pb.CommitRemoteLog) { c.LeaderEpoch = 3 }), fenced, []string{"leader epoch 3", "current is 4"}},
		{"built on an older manifest", req(func(c *pb.CommitRemoteLog) { c.ExpectedVersion = 2 }), fenced, []string{"version 2 expected", "current is 3"}},
		{"built on a newer manifest", req(func(c *pb.CommitRemoteLog) { c.ExpectedVersion = 4 }), fenced, []string{"version 4"}},
		{"fenced before invalid", req(func(c *pb.CommitRemoteLog) { c.LeaderEpoch, c.RemoteLog = 3, nil }), fenced, []string{"leader epoch 3"}},
		{"no manifest", req(func(c *pb.CommitRemoteLog) { c.RemoteLog = nil }), invalid, []string{"manifest key"}},
		{"empty key", req(func(c *pb.CommitRemoteLog) { c.RemoteLog.ManifestKey = "" }), invalid, []string{"manifest key"}},
		{"start after end", req(func(c *pb.CommitRemoteLog) { c.RemoteLog.StartOffset = 900 }), invalid, []string{"[900, 800)"}},
		{"end moves back", req(func(c *pb.CommitRemoteLog) { c.RemoteLog.EndOffset = 400 }), invalid, []string{"end 400 before the committed end 500"}},
		{"start moves back", req(func(c *pb.CommitRemoteLog) { c.RemoteLog.StartOffset = 50 }), invalid, []string{"start 50 before the committed start 100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := bucketFixture(t, 4, 2, 1, 3)
			setBucket(t, h.s, cur)
			before := rawDump(t, h.s)
			wantRefused(t, h.apply(tc.cmd), tc.code, tc.want...)
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}

// TestCommitRemoteLogAfterFailover: once the controller moves leadership,
// the old leader's commit, prepared before, is FENCED and the new leader's
// goes through.
func TestCommitRemoteLogAfterFailover(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	old := h.bucket(1, 0)
	h.ok(fenceNodes(1))
	now := h.bucket(1, 0)
	if now.GetLeader() == 1 {
		t.Fatalf("leader did not move: %v", now)
	}
	wantRefused(t, h.apply(commitRemote(old, 1, 0, 0, 100)), pb.ErrorCode_ERROR_CODE_FENCED, "not the leader")
	h.ok(commitRemote(now, now.GetLeader(), 0, 0, 100))
}

func commitSnap(b *pb.BucketRecord, leader uint32, offset int64, retained int32) *pb.Command {
	return &pb.Command{Op: &pb.Command_CommitKvSnapshot{CommitKvSnapshot: &pb.CommitKVSnapshot{
		TableId: b.GetTableId(), Bucket: b.GetBucket(), LeaderId: leader, LeaderEpoch: b.GetLeaderEpoch(),
		Snapshot: &pb.KVSnapshot{ManifestKey: fmt.Sprintf("s/%d", offset), Offset: offset, Rows: 1, Bytes: 1},
		Retained: retained,
	}}}
}

func TestCommitKVSnapshot(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	b := h.bucket(1, 0)
	h.ok(commitSnap(b, 1, 100, 2))
	h.ok(commitSnap(b, 1, 200, 2))
	res := h.ok(commitSnap(b, 1, 300, 2))
	snaps := res.GetBucket().GetKvSnapshots()
	if len(snaps) != 2 || snaps[0].GetOffset() != 200 || snaps[1].GetOffset() != 300 || snaps[1].GetLeaderEpoch() != b.GetLeaderEpoch() {
		t.Fatalf("snapshots %v; want 200 and 300, the oldest dropped", snaps)
	}
	if after := h.bucket(1, 0); after.GetBucketEpoch() != b.GetBucketEpoch() {
		t.Fatalf("bucket epoch moved: %d → %d", b.GetBucketEpoch(), after.GetBucketEpoch())
	}
	before := rawDump(t, h.s)
	for _, tc := range []struct {
		cmd  *pb.Command
		code pb.ErrorCode
		want string
	}{
		{commitSnap(b, 2, 400, 2), pb.ErrorCode_ERROR_CODE_FENCED, "not the leader"},
		{commitSnap(b, 1, 250, 2), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "below the newest"},
		{commitSnap(b, 1, 400, 0), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "to retain"},
		{commitSnap(b, 1, 400, 101), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "to retain"},
	} {
		wantRefused(t, h.apply(tc.cmd), tc.code, tc.want)
	}
	stale := proto.Clone(b).(*pb.BucketRecord)
	stale.LeaderEpoch--
	wantRefused(t, h.apply(commitSnap(stale, 1, 400, 2)), pb.ErrorCode_ERROR_CODE_FENCED, "leader epoch")
	if rawDump(t, h.s) != before {
		t.Fatal("a refused snapshot commit changed the state")
	}
}

// TestUncleanElectionFencesRemoteCopies: an unclean election of a bucket
// with a remote log and KV snapshots fences them (remote storage 6): a
// plain remote-log commit and a KV snapshot commit are refused until the
// new leader commits the remote log cut at its divergence point, which may
// end below the committed end, drops the snapshots past the point and
// lifts the fence. A clean election fences nothing. Before, electBucket
// kept the old manifest and snapshots as they were, and the new leader's
// history was served from them below the remote end.
func TestUncleanElectionFencesRemoteCopies(t *testing.T) {
	r := []uint32{1, 2, 3}
	withCopies := func(b *pb.BucketRecord) *pb.BucketRecord {
		b.RemoteLog = &pb.RemoteLog{ManifestKey: "m/old", StartOffset: 0, EndOffset: 500, Version: 3, LeaderEpoch: 3}
		b.KvSnapshots = []*pb.KVSnapshot{{ManifestKey: "s/1", Offset: 200}, {ManifestKey: "s/2", Offset: 450}}
		return b
	}
	live := func(id uint32) bool { return id != 1 }

	clean := withCopies(bk(r, 0, []uint32{1, 2}, 3, 3))
	if _, refusal := electBucket(clean, live, nil, true, noLogs); refusal != nil || clean.GetRemoteFenceEpoch() != 0 {
		t.Fatalf("clean election: %v, fence %d; want no fence", refusal, clean.GetRemoteFenceEpoch())
	}
	noCopies := bk(r, 0, []uint32{1}, 3, 3)
	if _, refusal := electBucket(noCopies, live, nil, true, noLogs); refusal != nil || noCopies.GetRemoteFenceEpoch() != 0 {
		t.Fatalf("unclean election without remote copies: %v, fence %d; want no fence", refusal, noCopies.GetRemoteFenceEpoch())
	}

	h := bucketFixture(t, 3, 1, 2, 3)
	b := withCopies(bk(r, 0, []uint32{1}, 3, 3))
	if _, refusal := electBucket(b, live, nil, true, noLogs); refusal != nil || b.GetRemoteFenceEpoch() != 4 || b.GetLeader() != 2 {
		t.Fatalf("unclean election: %v, %v; want node 2 leading with the copies fenced at epoch 4", refusal, b)
	}
	setBucket(t, h.s, b)

	wantRefused(t, h.apply(commitRemote(b, 2, 3, 0, 600)), pb.ErrorCode_ERROR_CODE_FENCED, "awaits its cut")
	snap := &pb.Command{Op: &pb.Command_CommitKvSnapshot{CommitKvSnapshot: &pb.CommitKVSnapshot{TableId: 1, Bucket: 0,
		LeaderId: 2, LeaderEpoch: 4, Retained: 2, Snapshot: &pb.KVSnapshot{ManifestKey: "s/3", Offset: 600}}}}
	wantRefused(t, h.apply(snap), pb.ErrorCode_ERROR_CODE_FENCED, "await their cut")

	cut := commitRemote(b, 2, 3, 0, 180)
	cut.GetCommitRemoteLog().FenceCut, cut.GetCommitRemoteLog().CutOffset = true, 300
	res := h.ok(cut)
	got := res.GetBucket()
	if got.GetRemoteFenceEpoch() != 0 || got.GetRemoteLog().GetEndOffset() != 180 || got.GetRemoteLog().GetVersion() != 4 ||
		len(got.GetKvSnapshots()) != 1 || got.GetKvSnapshots()[0].GetOffset() != 200 {
		t.Fatalf("after the cut at 300: %v; want the fence lifted, the remote log ending at 180, only the snapshot at 200 left", got)
	}
	again := commitRemote(got, 2, 4, 0, 180)
	again.GetCommitRemoteLog().FenceCut, again.GetCommitRemoteLog().CutOffset = true, 300
	wantRefused(t, h.apply(again), pb.ErrorCode_ERROR_CODE_FENCED, "no unclean election")
	h.ok(commitRemote(got, 2, 4, 0, 700))
}
