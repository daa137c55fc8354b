package metastate

import (
	"cmp"
	"slices"

	"github.com/floedb/floe/transport/pb"
)

// maxLiveNodes bounds the node ids of one ElectLeaders.
const maxLiveNodes = 1 << 16

// MaxReplicaLogs bounds the replica log states of one ElectLeaders: a
// whole table of MaxBuckets buckets with 16 live replicas each.
const MaxReplicaLogs = MaxBuckets * 16

// electLeaders is an operator's election of leaders for one bucket of a table
// or all of them; electBucket says how each bucket is decided. Buckets that
// get a leader are stored and listed as elected, the others with the reason.
// When none gets a leader the command is refused with the first bucket's
// reason, so a single-bucket election fails exactly when that bucket does;
// a bucket that could not get a leader comes before one already led by its
// first live in-sync replica, so ALREADY_EXISTS means that every bucket is
// (nothing to do).
func (a *applier) electLeaders(c *pb.ElectLeaders) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "elect leaders: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	name := c.GetDatabase() + "." + c.GetTable()
	t, p, buckets, err := (&View{tx: a.tx}).PhysicalTable(c.GetDatabase(), c.GetTable(), c.GetPartition())
	if err != nil {
		return nil, err
	}
	if p != nil {
		name += "/" + p.GetName()
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
	logs, err := replicaLogsByBucket(c.GetReplicaLogs())
	if err != nil {
		return nil, err
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
		bl := logs[b.GetBucket()]
		el, refusal := electBucket(b, live, draining, c.GetUnclean(), func(id uint32) *pb.ReplicaLog { return bl[id] })
		if refusal != nil {
			refusal.Msg = "table " + name + " " + refusal.Msg
			e.Code, e.Error = refusal.Code, refusal.Msg
			if firstRefusal == nil || (firstRefusal.Code == codeAlreadyExists && refusal.Code != codeAlreadyExists) {
				firstRefusal = refusal
			}
		} else {
			e.Elected, e.Unclean, e.Candidates = true, el.unclean, el.ranked
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

// replicaLogsByBucket indexes an election's replica log states by bucket
// and node; INVALID_REQUEST for too many, a second state of the same
// replica, or a state no log can have.
func replicaLogsByBucket(logs []*pb.ReplicaLog) (map[int32]map[uint32]*pb.ReplicaLog, error) {
	if len(logs) > MaxReplicaLogs {
		return nil, errorf(codeInvalidRequest, "elect leaders: %d replica log states exceed %d", len(logs), MaxReplicaLogs)
	}
	out := map[int32]map[uint32]*pb.ReplicaLog{}
	for _, l := range logs {
		if l.GetLatestEpoch() < -1 || l.GetEndOffset() < 0 {
			return nil, errorf(codeInvalidRequest, "elect leaders: bucket %d on node %d: latest epoch %d, end offset %d",
				l.GetBucket(), l.GetNodeId(), l.GetLatestEpoch(), l.GetEndOffset())
		}
		byNode := out[l.GetBucket()]
		if byNode == nil {
			byNode = map[uint32]*pb.ReplicaLog{}
			out[l.GetBucket()] = byNode
		}
		if byNode[l.GetNodeId()] != nil {
			return nil, errorf(codeInvalidRequest, "elect leaders: two log states of bucket %d on node %d", l.GetBucket(), l.GetNodeId())
		}
		byNode[l.GetNodeId()] = l
	}
	return out, nil
}

// bucketElection is how electBucket elected a bucket's leader.
type bucketElection struct {
	// unclean: the leader came from outside the ISR.
	unclean bool
	// ranked are an unclean election's live replicas, best first.
	ranked []*pb.ElectionCandidate
}

// electBucket elects a leader for one bucket, in place; a refusal changes
// nothing.
//
//   - The first replica in assignment order that is in the ISR and live
//     leads (a clean election). If it leads already: refused,
//     ALREADY_EXISTS.
//   - No live ISR member, unclean: the live replica rankUnclean puts first
//     leads, as the ISR's only member, and the unclean elections are
//     counted. Not unclean, or no live replica: refused,
//     NOT_ENOUGH_REPLICAS.
//
// "First" skips draining replicas (nil: none) unless no other one
// qualifies, so an election does not hand back what a drain moved. A new
// leader raises the leader and bucket epochs, and the ISR members that are
// not live leave the ISR. An unclean election fences the bucket's remote
// log and KV snapshots (BucketRecord.remote_fence_epoch). logs(id) is what
// node id reported of its replica's log, nil when nothing is known.
func electBucket(b *pb.BucketRecord, live, draining func(id uint32) bool, unclean bool,
	logs func(id uint32) *pb.ReplicaLog) (bucketElection, *Error) {
	notLive := func(id uint32) bool { return !live(id) }
	next := electable(b, notLive, draining)
	var el bucketElection
	switch {
	case next != 0 && next == b.GetLeader():
		return el, errorf(codeAlreadyExists, "bucket %d is already led by node %d, its first live in-sync replica",
			b.GetBucket(), next)
	case next != 0:
		b.Isr = slices.DeleteFunc(slices.Clone(b.GetIsr()), notLive)
	case !unclean:
		return el, errorf(codeNotEnoughReplicas,
			"bucket %d has no live in-sync replica (ISR %v, replicas %v); an unclean election may pick a replica outside the ISR, losing what only the ISR held",
			b.GetBucket(), b.GetIsr(), b.GetReplicas())
	default:
		el.ranked = rankUnclean(b.GetReplicas(), live, draining, logs)
		if len(el.ranked) == 0 {
			return el, errorf(codeNotEnoughReplicas, "bucket %d: none of its replicas %v is alive", b.GetBucket(), b.GetReplicas())
		}
		next = el.ranked[0].GetNodeId()
		b.Isr = []uint32{next}
		b.UncleanElections++
		el.unclean = true
	}
	b.Leader = next
	b.LeaderEpoch++
	b.BucketEpoch++
	if el.unclean && (b.GetRemoteLog().GetManifestKey() != "" || len(b.GetKvSnapshots()) > 0 || b.GetLakeOffset() > 0) {
		// A new history: the remote log, KV snapshots and lake copy the
		// old one until the new leader cuts them where the two part
		// (remote storage 6, Lake 4).
		b.RemoteFenceEpoch = b.LeaderEpoch
	}
	return el, nil
}

// rankUnclean orders the live replicas of an unclean election, best first
// (rule "damage and the last copy" 2): the one whose log holds the latest
// leader epoch, of those the longest log, then assignment order. A replica
// whose log is unknown (its node did not answer the controller) ranks after
// every known one: it may hold anything, even nothing. A draining replica
// ranks after every other one, as in every election (preferred).
func rankUnclean(replicas []uint32, live, draining func(id uint32) bool, logs func(id uint32) *pb.ReplicaLog) []*pb.ElectionCandidate {
	var out []*pb.ElectionCandidate
	for _, id := range replicas {
		if !live(id) {
			continue
		}
		c := &pb.ElectionCandidate{NodeId: id, Draining: draining != nil && draining(id)}
		if l := logs(id); l != nil {
			c.LogKnown, c.LatestEpoch, c.EndOffset = true, l.GetLatestEpoch(), l.GetEndOffset()
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(x, y *pb.ElectionCandidate) int {
		return cmp.Or(
			falseFirst(x.GetDraining(), y.GetDraining()),
			falseFirst(!x.GetLogKnown(), !y.GetLogKnown()),
			cmp.Compare(y.GetLatestEpoch(), x.GetLatestEpoch()),
			cmp.Compare(y.GetEndOffset(), x.GetEndOffset()))
	})
	return out
}

// falseFirst orders false before true.
func falseFirst(x, y bool) int {
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}
