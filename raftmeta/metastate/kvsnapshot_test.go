package metastate

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// commitSnapOn is a CommitKVSnapshot that names the list version it built
// on, as this build's leaders send it.
func commitSnapOn(b *pb.BucketRecord, leader uint32, expected, offset int64, retained int32) *pb.Command {
	cmd := commitSnap(b, leader, offset, retained)
	cmd.GetCommitKvSnapshot().ExpectedVersion = proto.Int64(expected)
	return cmd
}

// TestCommitKVSnapshotVersion: each commit that names the version it
// built on gets its index as the list's new version, and the next commit
// must name that one.
func TestCommitKVSnapshotVersion(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	b := h.bucket(1, 0)
	res := h.ok(withID("s1", commitSnapOn(b, 1, 0, 100, 2)))
	v1 := KVSnapshotsVersion(res.GetBucket().GetKvSnapshots())
	if v1 != int64(h.index) {
		t.Fatalf("first snapshot's version %d; want its commit's index %d", v1, h.index)
	}
	// A retry of the same request is the first result, not a FENCED for
	// the version it raised.
	if again := h.apply(withID("s1", commitSnapOn(b, 1, 0, 100, 2))); !proto.Equal(again.GetBucket(), res.GetBucket()) {
		t.Fatalf("retry answered %v", again)
	}
	wantRefused(t, h.apply(commitSnapOn(b, 1, 0, 200, 2)), pb.ErrorCode_ERROR_CODE_FENCED,
		"version 0 expected", fmt.Sprintf("current is %d", v1))
	res = h.ok(commitSnapOn(b, 1, v1, 200, 2))
	snaps := res.GetBucket().GetKvSnapshots()
	v2 := KVSnapshotsVersion(snaps)
	if len(snaps) != 2 || v2 != int64(h.index) || v2 <= v1 || snaps[0].GetVersion() != v1 {
		t.Fatalf("after the second commit: %v; want versions %d and %d", snaps, v1, h.index)
	}
	// A version the client sets on the snapshot is not what is stored.
	cmd := commitSnapOn(b, 1, v2, 300, 2)
	cmd.GetCommitKvSnapshot().Snapshot.Version = 1 << 40
	if got := KVSnapshotsVersion(h.ok(cmd).GetBucket().GetKvSnapshots()); got != int64(h.index) {
		t.Fatalf("stored version %d; want the commit's index %d", got, h.index)
	}
}

// TestCommitKVSnapshotVersionRefused: a commit that built on another list
// than the committed one changes nothing.
func TestCommitKVSnapshotVersionRefused(t *testing.T) {
	const fenced = pb.ErrorCode_ERROR_CODE_FENCED
	cur := &pb.BucketRecord{TableId: 1, Bucket: 0, Replicas: []uint32{2, 1, 3}, Leader: 2, LeaderEpoch: 6,
		Isr: []uint32{2, 3}, BucketEpoch: 9, KvSnapshots: []*pb.KVSnapshot{
			{ManifestKey: "s/100", Offset: 100, LeaderEpoch: 5, Version: 40},
			{ManifestKey: "s/200", Offset: 200, LeaderEpoch: 6, Version: 52},
		}}
	tests := []struct {
		name string
		cmd  *pb.Command
		want []string
	}{
		{"built on an older list", commitSnapOn(cur, 2, 40, 300, 2), []string{"version 40 expected", "current is 52"}},
		{"built on a newer list", commitSnapOn(cur, 2, 60, 300, 2), []string{"version 60 expected"}},
		{"built on no list", commitSnapOn(cur, 2, 0, 300, 2), []string{"version 0 expected"}},
		{"an older build's commit after versions", commitSnap(cur, 2, 300, 2), []string{"naming no list version", "after version 52"}},
		{"fenced before invalid", commitSnapOn(cur, 2, 40, 150, 0), []string{"version 40 expected"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := bucketFixture(t, 4, 2, 1, 3)
			setBucket(t, h.s, cur)
			before := rawDump(t, h.s)
			wantRefused(t, h.apply(tc.cmd), fenced, tc.want...)
			if after := rawDump(t, h.s); after != before {
				t.Errorf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}

// TestCommitKVSnapshotUnversioned: snapshots stored before versions have
// version 0, so the list's version is 0 and a commit naming 0 builds on
// it; a command from a build before versions (no expected_version) is
// applied as that build did (no compare, version 0) while the newest
// snapshot has no version, so a log replayed after an upgrade gives the
// state it gave.
func TestCommitKVSnapshotUnversioned(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	b := h.bucket(1, 0)
	h.ok(commitSnap(b, 1, 100, 3))
	res := h.ok(commitSnap(b, 1, 200, 3))
	for _, s := range res.GetBucket().GetKvSnapshots() {
		if s.GetVersion() != 0 {
			t.Fatalf("an older build's commit stored version %d: %v", s.GetVersion(), s)
		}
	}
	wantRefused(t, h.apply(commitSnapOn(b, 1, 7, 300, 3)), pb.ErrorCode_ERROR_CODE_FENCED, "version 7 expected", "current is 0")
	res = h.ok(commitSnapOn(b, 1, 0, 300, 3))
	snaps := res.GetBucket().GetKvSnapshots()
	if len(snaps) != 3 || snaps[0].GetVersion() != 0 || snaps[2].GetVersion() != int64(h.index) {
		t.Fatalf("snapshots %v; want the two unversioned ones and one at version %d", snaps, h.index)
	}
}

// TestCommitKVSnapshotAfterFailover: leader A (epoch e) commits S1; the
// controller moves leadership to B (epoch e+1), which commits S2 on S1's
// version; A's commit prepared on S1 is refused, and so is one of B's
// prepared on the list before S2.
func TestCommitKVSnapshotAfterFailover(t *testing.T) {
	h := bucketFixture(t, 3, 1, 2, 3)
	a := h.bucket(1, 0)
	v1 := KVSnapshotsVersion(h.ok(commitSnapOn(a, 1, 0, 100, 2)).GetBucket().GetKvSnapshots())
	h.ok(fenceNodes(1))
	b := h.bucket(1, 0)
	if b.GetLeader() == 1 || b.GetLeaderEpoch() <= a.GetLeaderEpoch() {
		t.Fatalf("leadership did not move: %v", b)
	}
	v2 := KVSnapshotsVersion(h.ok(commitSnapOn(b, b.GetLeader(), v1, 200, 2)).GetBucket().GetKvSnapshots())
	wantRefused(t, h.apply(commitSnapOn(a, 1, v1, 300, 2)), pb.ErrorCode_ERROR_CODE_FENCED, "not the leader")
	wantRefused(t, h.apply(commitSnapOn(b, b.GetLeader(), v1, 300, 2)), pb.ErrorCode_ERROR_CODE_FENCED,
		fmt.Sprintf("version %d expected, current is %d", v1, v2))
}
