package metastate

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// maxManifestKeyBytes bounds a remote log's manifest key (S3's key limit).
const maxManifestKeyBytes = 1024

// commitRemoteLog is a bucket leader's commit of a new remote manifest:
// FENCED unless it comes from the current leader at the current leader
// epoch and builds on the committed version; INVALID_REQUEST when the new
// remote log ends before the committed one or starts before it, or is
// malformed. The version rises by one; leader and bucket epochs stay.
//
// After an unclean election (remote_fence_epoch) only a fence cut is
// taken: the remote log as cut at the new leader's divergence point, which
// may end before the committed one; the KV snapshots past that point go
// and the fence is lifted.
func (a *applier) commitRemoteLog(c *pb.CommitRemoteLog) (*pb.CommandResult, error) {
	b, err := a.bucketRecord(c.GetTableId(), c.GetBucket())
	if err != nil {
		return nil, err
	}
	if err := checkLeader(b, c.GetLeaderId(), c.GetLeaderEpoch()); err != nil {
		return nil, err
	}
	cur := b.GetRemoteLog()
	if c.GetExpectedVersion() != cur.GetVersion() {
		return nil, errorf(codeFenced, "table %d bucket %d: remote log version %d expected, current is %d",
			b.GetTableId(), b.GetBucket(), c.GetExpectedVersion(), cur.GetVersion())
	}
	switch fence := b.GetRemoteFenceEpoch(); {
	case fence != 0 && !c.GetFenceCut():
		return nil, errorf(codeFenced, "table %d bucket %d: the remote log awaits its cut after the unclean election of leader epoch %d",
			b.GetTableId(), b.GetBucket(), fence)
	case fence == 0 && c.GetFenceCut():
		return nil, errorf(codeFenced, "table %d bucket %d: no unclean election fences the remote log (cut already committed?)",
			b.GetTableId(), b.GetBucket())
	}
	next := c.GetRemoteLog()
	cut := c.GetFenceCut()
	switch {
	case next == nil || next.GetManifestKey() == "" || len(next.GetManifestKey()) > maxManifestKeyBytes:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: a remote log needs a manifest key of 1 to %d bytes",
			b.GetTableId(), b.GetBucket(), maxManifestKeyBytes)
	case next.GetStartOffset() < 0 || next.GetStartOffset() > next.GetEndOffset() || next.GetSegments() < 0 || next.GetBytes() < 0 ||
		next.GetRunStartOffset() < 0 || next.GetRunStartOffset() > next.GetEndOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log [%d, %d) with %d segments, %d bytes",
			b.GetTableId(), b.GetBucket(), next.GetStartOffset(), next.GetEndOffset(), next.GetSegments(), next.GetBytes())
	case cut && (next.GetEndOffset() > c.GetCutOffset() || c.GetCutOffset() < 0):
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: a remote log cut at %d ends at %d",
			b.GetTableId(), b.GetBucket(), c.GetCutOffset(), next.GetEndOffset())
	case !cut && cur != nil && next.GetEndOffset() < cur.GetEndOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log end %d before the committed end %d",
			b.GetTableId(), b.GetBucket(), next.GetEndOffset(), cur.GetEndOffset())
	case !cut && cur != nil && next.GetStartOffset() < cur.GetStartOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log start %d before the committed start %d",
			b.GetTableId(), b.GetBucket(), next.GetStartOffset(), cur.GetStartOffset())
	}
	rl := proto.Clone(next).(*pb.RemoteLog)
	rl.Version = cur.GetVersion() + 1
	rl.LeaderEpoch = b.GetLeaderEpoch()
	b.RemoteLog = rl
	if cut {
		// Snapshots at or below the cut hold a log prefix both histories
		// share; those past it hold the old one.
		b.KvSnapshots = slices.DeleteFunc(slices.Clone(b.GetKvSnapshots()), func(s *pb.KVSnapshot) bool {
			return s.GetOffset() > c.GetCutOffset()
		})
		// The lake's records past the cut are the old history's too: its
		// next round cuts its files back to here (Lake 4).
		b.LakeOffset = min(b.GetLakeOffset(), c.GetCutOffset())
		b.RemoteFenceEpoch = 0
	}
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}}, nil
}

// bucketRecord reads a bucket's record; a missing one is UNKNOWN_TABLE.
func (a *applier) bucketRecord(tableID uint64, bucket int32) (*pb.BucketRecord, error) {
	b := &pb.BucketRecord{}
	ok, err := getRecord(a.tx.Bucket(bucketBuckets), bucketKey(tableID, bucket), b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(codeUnknownTable, "table %d has no bucket %d", tableID, bucket)
	}
	return b, nil
}

// checkLeader refuses (FENCED) a command that is not from the bucket's
// current leader at its current leader epoch.
func checkLeader(b *pb.BucketRecord, leaderID uint32, leaderEpoch int32) error {
	switch {
	case b.GetLeader() == 0:
		return errorf(codeFenced, "table %d bucket %d is offline (leader epoch %d)", b.GetTableId(), b.GetBucket(), b.GetLeaderEpoch())
	case leaderID != b.GetLeader():
		return errorf(codeFenced, "table %d bucket %d: node %d is not the leader (node %d is, at leader epoch %d)",
			b.GetTableId(), b.GetBucket(), leaderID, b.GetLeader(), b.GetLeaderEpoch())
	case leaderEpoch != b.GetLeaderEpoch():
		return errorf(codeFenced, "table %d bucket %d: leader epoch %d, current is %d",
			b.GetTableId(), b.GetBucket(), leaderEpoch, b.GetLeaderEpoch())
	}
	return nil
}
