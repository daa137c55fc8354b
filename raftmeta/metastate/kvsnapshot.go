package metastate

import (
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// maxKVSnapshotsRetained bounds kv.snapshot.retained, so a bucket record
// stays small.
const maxKVSnapshotsRetained = 100

// KVSnapshotsVersion is the version of a bucket's committed KV snapshot
// list: its newest snapshot's, the index of the commit that appended it;
// 0 when the list is empty or its newest was committed without a version
// (by a build before versions). A CommitKVSnapshot names the version of
// the list it built on.
func KVSnapshotsVersion(snaps []*pb.KVSnapshot) int64 {
	if len(snaps) == 0 {
		return 0
	}
	return snaps[len(snaps)-1].GetVersion()
}

// commitKVSnapshot is a primary-key bucket leader's commit of a KV
// snapshot: FENCED unless it comes from the current leader at the current
// leader epoch and builds on the committed list's version; INVALID_REQUEST
// for a snapshot below the newest one, a malformed one, or a retained
// count out of range. The snapshot is appended, versioned by the commit's
// index, and the oldest dropped down to retained.
//
// The version compare is what makes reusing parts safe: the new snapshot
// lists parts its builder found in the committed snapshots it read, and a
// commit in between may have dropped those snapshots and collected their
// parts. A command without expected_version was proposed by a build
// before versions and is applied as that build applied it (no compare, no
// version), so a replayed log gives the state it gave, but only while the
// newest snapshot has no version: after one does, a command that cannot
// say what it built on is refused rather than risk the race.
func (a *applier) commitKVSnapshot(c *pb.CommitKVSnapshot) (*pb.CommandResult, error) {
	b, err := a.bucketRecord(c.GetTableId(), c.GetBucket())
	if err != nil {
		return nil, err
	}
	if err := checkLeader(b, c.GetLeaderId(), c.GetLeaderEpoch()); err != nil {
		return nil, err
	}
	if fence := b.GetRemoteFenceEpoch(); fence != 0 {
		return nil, errorf(codeFenced, "table %d bucket %d: KV snapshots await their cut after the unclean election of leader epoch %d",
			b.GetTableId(), b.GetBucket(), fence)
	}
	snaps := b.GetKvSnapshots()
	cur := KVSnapshotsVersion(snaps)
	versioned := c.ExpectedVersion != nil
	switch {
	case versioned && c.GetExpectedVersion() != cur:
		return nil, errorf(codeFenced, "table %d bucket %d: KV snapshot list version %d expected, current is %d",
			b.GetTableId(), b.GetBucket(), c.GetExpectedVersion(), cur)
	case !versioned && cur != 0:
		return nil, errorf(codeFenced, "table %d bucket %d: a KV snapshot commit naming no list version (from an older build) after version %d",
			b.GetTableId(), b.GetBucket(), cur)
	}
	snap := c.GetSnapshot()
	switch {
	case snap == nil || snap.GetManifestKey() == "" || len(snap.GetManifestKey()) > maxManifestKeyBytes:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: a KV snapshot needs a manifest key of 1 to %d bytes",
			b.GetTableId(), b.GetBucket(), maxManifestKeyBytes)
	case snap.GetOffset() < 0 || snap.GetRows() < 0 || snap.GetBytes() < 0:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: KV snapshot at offset %d with %d rows, %d bytes",
			b.GetTableId(), b.GetBucket(), snap.GetOffset(), snap.GetRows(), snap.GetBytes())
	case len(snaps) > 0 && snap.GetOffset() < snaps[len(snaps)-1].GetOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: KV snapshot at offset %d below the newest one's %d",
			b.GetTableId(), b.GetBucket(), snap.GetOffset(), snaps[len(snaps)-1].GetOffset())
	case c.GetRetained() < 1 || c.GetRetained() > maxKVSnapshotsRetained:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: %d snapshots to retain, want 1 to %d",
			b.GetTableId(), b.GetBucket(), c.GetRetained(), maxKVSnapshotsRetained)
	}
	snap = proto.Clone(snap).(*pb.KVSnapshot)
	snap.LeaderEpoch = b.GetLeaderEpoch()
	snap.Version = 0
	if versioned {
		snap.Version = int64(a.index)
	}
	snaps = append(snaps, snap)
	if n := len(snaps) - int(c.GetRetained()); n > 0 {
		snaps = snaps[n:]
	}
	b.KvSnapshots = snaps
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}}, nil
}
