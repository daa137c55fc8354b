package metastate

import (
	"slices"

	"github.com/floedb/floe/transport/pb"
)

// maxLiveNodes bounds the node ids of one ElectLeaders.
const maxLiveNodes = 1 << 16

// electLeaders is an operator's election of leaders for one bucket of a table
// or all of them; electBucket says how each bucket is decided. Buckets that
// get a leader are stored and listed as elected, the others with the reason.
// When none gets a leader the command is refused with the first bucket's
// reason, so a single-bucket election fails exactly when that bucket does.
func (a *applier) electLeaders(c *pb.ElectLeaders) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "elect leaders: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	name := c.GetDatabase() + "." + c.GetTable()
	t, buckets, err := (&View{tx: a.tx}).Table(c.GetDatabase(), c.GetTable())
	if err != nil {
		return nil, err
	}
	if c.Bucket != nil {
		i := slices.IndexFunc(buckets, func(b *pb.BucketRecord) bool { return b.GetBucket() == c.GetBucket() })
		if i < 0 {
			return nil, errorf(codeUnknownTable, "table %.256q has no bucket %d (it has %d)", name, c.GetBucket(), t.GetBuckets())
		}
		buckets = buckets[i : i+1]
	}
	if len(buckets) == 0 {
		return nil, errorf(codeInternal, "table %.256q has no buckets", name)
	}
	live := func(id uint32) bool { return slices.Contains(c.GetLiveNodes(), id) }
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	result := &pb.ElectionResult{}
	var firstRefusal *Error
	elected := 0
	for _, b := range buckets {
		e := &pb.BucketElection{Bucket: b}
		unclean, refusal := electBucket(b, live, draining, c.GetUnclean())
		if refusal != nil {
			refusal.Msg = "table " + name + " " + refusal.Msg
			e.Code, e.Error = refusal.Code, refusal.Msg
			if firstRefusal == nil {
				firstRefusal = refusal
			}
		} else {
			e.Elected, e.Unclean = true, unclean
			elected++
			if err := a.putBucket(b); err != nil {
				return nil, err
			}
		}
		result.Buckets = append(result.Buckets, e)
	}
	if elected == 0 {
		return nil, firstRefusal
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Election{Election: result}}, nil
}

// electBucket elects a leader for one bucket, in place, and reports whether
// the election was unclean; a refusal changes nothing.
//
//   - The first replica in assignment order that is in the ISR and live
//     leads (a clean election). If it leads already: refused,
//     ALREADY_EXISTS.
//   - No live ISR member, unclean: the first live replica in assignment
//     order leads, as the ISR's only member, and the unclean elections are
//     counted. Not unclean, or no live replica: refused,
//     NOT_ENOUGH_REPLICAS.
//
// "First" skips draining replicas (nil: none) unless no other one
// qualifies, so an election does not hand back what a drain moved. A new
// leader raises the leader and bucket epochs, and the ISR members that are
// not live leave the ISR. An unclean election fences the bucket's remote
// log and KV snapshots (BucketRecord.remote_fence_epoch).
func electBucket(b *pb.BucketRecord, live, draining func(id uint32) bool, unclean bool) (bool, *Error) {
	notLive := func(id uint32) bool { return !live(id) }
	next := electable(b, notLive, draining)
	outsideISR := false
	switch {
	case next != 0 && next == b.GetLeader():
		return false, errorf(codeAlreadyExists, "bucket %d is already led by node %d, its first live in-sync replica",
			b.GetBucket(), next)
	case next != 0:
		b.Isr = slices.DeleteFunc(slices.Clone(b.GetIsr()), notLive)
	case !unclean:
		return false, errorf(codeNotEnoughReplicas,
			"bucket %d has no live in-sync replica (ISR %v, replicas %v); an unclean election may pick a replica outside the ISR, losing what only the ISR held",
			b.GetBucket(), b.GetIsr(), b.GetReplicas())
	default:
		next = preferred(b.GetReplicas(), live, draining)
		if next == 0 {
			return false, errorf(codeNotEnoughReplicas, "bucket %d: none of its replicas %v is alive", b.GetBucket(), b.GetReplicas())
		}
		b.Isr = []uint32{next}
		b.UncleanElections++
		outsideISR = true
	}
	b.Leader = next
	b.LeaderEpoch++
	b.BucketEpoch++
	if outsideISR && (b.GetRemoteLog().GetManifestKey() != "" || len(b.GetKvSnapshots()) > 0) {
		// A new history: the remote log and KV snapshots copy the old
		// one until the new leader cuts them where the two part
		// (remote storage 6).
		b.RemoteFenceEpoch = b.LeaderEpoch
	}
	return outsideISR, nil
}
