package metastate

import (
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// maxKVSnapshotsRetained bounds kv.snapshot.retained, so a bucket record
// stays small.
const maxKVSnapshotsRetained = 100

// commitKVSnapshot is a primary-key bucket leader's commit of a KV
// snapshot: FENCED unless it comes from the current leader at the current
// leader epoch; INVALID_REQUEST for a snapshot below the newest one, a
// malformed one, or a retained count out of range. The snapshot is
// appended and the oldest dropped down to retained.
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
	snap := c.GetSnapshot()
	snaps := b.GetKvSnapshots()
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
