package metastate

import (
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
func (a *applier) commitRemoteLog(c *pb.CommitRemoteLog) (*pb.CommandResult, error) {
	b := &pb.BucketRecord{}
	ok, err := getRecord(a.tx.Bucket(bucketBuckets), bucketKey(c.GetTableId(), c.GetBucket()), b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(codeUnknownTable, "table %d has no bucket %d", c.GetTableId(), c.GetBucket())
	}
	cur := b.GetRemoteLog()
	switch {
	case b.GetLeader() == 0:
		return nil, errorf(codeFenced, "table %d bucket %d is offline (leader epoch %d)", b.GetTableId(), b.GetBucket(), b.GetLeaderEpoch())
	case c.GetLeaderId() != b.GetLeader():
		return nil, errorf(codeFenced, "table %d bucket %d: node %d is not the leader (node %d is, at leader epoch %d)",
			b.GetTableId(), b.GetBucket(), c.GetLeaderId(), b.GetLeader(), b.GetLeaderEpoch())
	case c.GetLeaderEpoch() != b.GetLeaderEpoch():
		return nil, errorf(codeFenced, "table %d bucket %d: leader epoch %d, current is %d",
			b.GetTableId(), b.GetBucket(), c.GetLeaderEpoch(), b.GetLeaderEpoch())
	case c.GetExpectedVersion() != cur.GetVersion():
		return nil, errorf(codeFenced, "table %d bucket %d: remote log version %d expected, current is %d",
			b.GetTableId(), b.GetBucket(), c.GetExpectedVersion(), cur.GetVersion())
	}
	next := c.GetRemoteLog()
	switch {
	case next == nil || next.GetManifestKey() == "" || len(next.GetManifestKey()) > maxManifestKeyBytes:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: a remote log needs a manifest key of 1 to %d bytes",
			b.GetTableId(), b.GetBucket(), maxManifestKeyBytes)
	case next.GetStartOffset() < 0 || next.GetStartOffset() > next.GetEndOffset() || next.GetSegments() < 0 || next.GetBytes() < 0:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log [%d, %d) with %d segments, %d bytes",
			b.GetTableId(), b.GetBucket(), next.GetStartOffset(), next.GetEndOffset(), next.GetSegments(), next.GetBytes())
	case cur != nil && next.GetEndOffset() < cur.GetEndOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log end %d before the committed end %d",
			b.GetTableId(), b.GetBucket(), next.GetEndOffset(), cur.GetEndOffset())
	case cur != nil && next.GetStartOffset() < cur.GetStartOffset():
		return nil, errorf(codeInvalidRequest, "table %d bucket %d: remote log start %d before the committed start %d",
			b.GetTableId(), b.GetBucket(), next.GetStartOffset(), cur.GetStartOffset())
	}
	rl := proto.Clone(next).(*pb.RemoteLog)
	rl.Version = cur.GetVersion() + 1
	rl.LeaderEpoch = b.GetLeaderEpoch()
	b.RemoteLog = rl
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Bucket{Bucket: b}}, nil
}
