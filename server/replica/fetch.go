package replica

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Fetch limits.
const (
	maxFetchWait      = 30 * time.Second
	defaultFetchBytes = 1 << 20
	// maxFetchBytesTotal bounds a fetch's whole answer, encoded: below the
	// 16 MiB message limit a client built with the transport's defaults
	// takes. A consumer's max_bytes lowers it.
	maxFetchBytesTotal = 12 << 20
	// MaxFetchBuckets bounds the buckets of one fetch request (the
	// Server refuses more before decoding it); a follower that follows
	// more on one leader takes turns among them.
	MaxFetchBuckets = 16384
	// fetchBucketReserve is room kept in a fetch's answer for one more
	// bucket's fields besides its records (an error text, a remote
	// segment's URL).
	fetchBucketReserve = 4 << 10
)

// Fetch serves consumers (replica_id 0: data below the high watermark) and
// followers (their epoch checked, their end offset recorded, divergence
// reported), waiting up to max_wait_ms until min_bytes are there.
func (m *Manager) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	if len(req.Buckets) == 0 {
		return &pb.FetchResponse{}, nil
	}
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	total := int(req.MaxBytes)
	if total <= 0 || total > maxFetchBytesTotal {
		total = maxFetchBytesTotal
	}
	if req.ReplicaId != 0 {
		if err := m.checkFollower(req.ReplicaId, req.NodeEpoch); err != nil {
			return nil, err
		}
	}
	var watch *followerWatch // followers, once served with nothing to return
	for {
		ch := m.changes()
		// A wake-up by a change to some other bucket of the node, nothing
		// a follower asked for having moved, needs no serving again.
		if watch == nil || watch.ready() {
			resp, bytes, answerNow := m.fetchOnce(ctx, req, total)
			if bytes >= int(max(req.MinBytes, 1)) || answerNow || !time.Now().Before(deadline) {
				m.noteServed(req, resp)
				return resp, nil
			}
			if watch == nil && req.ReplicaId != 0 {
				watch = m.watchFollower(req)
			}
		}
		if !m.waitChange(ctx, ch, deadline) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			resp, _, _ := m.fetchOnce(ctx, req, total)
			m.noteServed(req, resp)
			return resp, nil
		}
		// Woken by a change, most often an append: the appends that came
		// with it (the other requests read from the same socket buffers,
		// writers woken by the same acks) are runnable now. Letting them
		// write first makes this answer carry them too: one fetch, one
		// write and one fsync on the follower for all of them instead of
		// one each. With nothing else to run this returns at once.
		runtime.Gosched()
	}
}

// followerWatch tells whether a follower's long-polling fetch, served once
// with nothing to return, could get something from serving it again: the
// node's change signal wakes every waiting fetch on any change to any
// bucket, and serving all of a follower's buckets again on each would cost
// a node with many buckets the product of its buckets and its writes.
type followerWatch struct {
	m      *Manager
	gen    uint64     // Manager.followGen when the fetch was first served
	reps   []*Replica // by request bucket; nil: not here
	offset []int64    // the follower's fetch offset per request bucket
}

func (m *Manager) watchFollower(req *pb.FetchRequest) *followerWatch {
	w := &followerWatch{m: m, gen: m.followGen.Load(), reps: make([]*Replica, len(req.Buckets)), offset: make([]int64, len(req.Buckets))}
	m.mu.Lock()
	for i, fb := range req.Buckets {
		w.reps[i], w.offset[i] = m.replicas[BucketID{TableID: fb.TableId, Bucket: fb.Bucket}], fb.Offset
	}
	m.mu.Unlock()
	return w
}

// ready reports whether serving the fetch again may answer differently:
// a role changed or a replica closed or failed (followGen moved), or a
// bucket's log was written past the follower's offset. The high watermark
// alone never ends a follower's wait (only batches do), so it is not
// watched.
func (w *followerWatch) ready() bool {
	if w.m.followGen.Load() != w.gen {
		return true
	}
	for i, r := range w.reps {
		if r == nil || r.log.WrittenEnd() > w.offset[i] {
			return true
		}
	}
	return false
}

// checkFollower fences a follower whose node epoch is older than the one the
// metadata has registered.
func (m *Manager) checkFollower(id uint32, epoch uint64) error {
	m.mu.Lock()
	n := m.nodes[id]
	m.mu.Unlock()
	if n != nil && epoch < n.NodeEpoch {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_FENCED,
			"node %d fetches with node epoch %d, the cluster knows epoch %d", id, epoch, n.NodeEpoch)
	}
	return nil
}

// fetchOnce reads the requested buckets once, in request order, until the
// encoded answer reaches total: as Kafka's fetch.max.bytes, the buckets
// past that point are left out of the answer (the first is always in), and
// their callers ask again. It returns the answer, its record bytes, and
// whether it must go back now whatever its size (an error, a divergence, a
// remote segment reference).
func (m *Manager) fetchOnce(ctx context.Context, req *pb.FetchRequest, total int) (*pb.FetchResponse, int, bool) {
	resp := &pb.FetchResponse{Buckets: make([]*pb.FetchedBucket, 0, min(len(req.Buckets), 64))}
	bytes, answerNow := 0, false
	encoded := 0 // the answer's encoded size so far
	for _, fb := range req.Buckets {
		if len(resp.Buckets) > 0 && encoded+fetchBucketReserve > total {
			break
		}
		budget := int(fb.MaxBytes)
		if budget <= 0 {
			budget = defaultFetchBytes
		}
		if len(resp.Buckets) == 0 {
			budget = min(budget, total) // the first bucket is always served, whatever the reserve
		} else {
			budget = min(budget, total-encoded-fetchBucketReserve)
		}
		out := &pb.FetchedBucket{TableId: fb.TableId, Bucket: fb.Bucket}
		id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
		var err error
		if r := m.replica(id); r == nil {
			err = m.missingReplica(id)
		} else if req.ReplicaId == 0 {
			err = r.serveConsumer(ctx, fb, budget, out)
		} else {
			err = r.serveFollower(req.ReplicaId, req.NodeEpoch, fb, budget, out)
		}
		if err != nil {
			var te *transport.Error
			if errors.As(err, &te) {
				out.ErrorCode, out.Error = te.Code, te.Error()
			} else {
				out.ErrorCode, out.Error = pb.ErrorCode_ERROR_CODE_INTERNAL, err.Error()
			}
			answerNow = true
		}
		bytes += len(out.Records)
		encoded += protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(out))
		resp.Buckets = append(resp.Buckets, out)
		if out.Diverging || out.Remote != nil {
			// Nothing to wait for: the follower truncates, the consumer
			// reads the remote segment itself.
			answerNow = true
		}
	}
	return resp, bytes, answerNow
}

// readInto copies batches from offset below limit into out; unflushed
// includes batches written but not fsynced yet (for followers).
func (r *Replica) readInto(from, limit int64, budget int, unflushed bool, out *pb.FetchedBucket) error {
	if budget <= 0 || from >= limit {
		return nil
	}
	read := r.log.ReadBelow
	if unflushed {
		read = r.log.ReadUnflushed
	}
	recs, err := read(from, limit, budget)
	if err != nil {
		return r.readError(err)
	}
	out.Records = append([]byte(nil), recs.Data...)
	recs.Release()
	return nil
}

// serveConsumer serves a consumer's read below the high watermark; an
// offset at or above it but within the log waits for it (a new leader's
// high watermark can lag the old one's, which the consumer already read
// up to).
func (r *Replica) serveConsumer(ctx context.Context, fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) error {
	if err := checkColumns(fb.Columns); err != nil {
		return err
	}
	r.mu.Lock()
	_, _, epoch, hw := r.stateLocked()
	out.LeaderEpoch, out.HighWatermark = epoch, hw
	out.LogStartOffset, out.LogEndOffset = r.log.StartOffset(), r.log.EndOffset()
	from, to, err := r.core.ConsumerRange(fb.Offset, out.LogStartOffset, out.LogEndOffset)
	if errors.Is(err, replication.ErrOutOfRange) && fb.Offset < out.LogStartOffset && r.inRemote(fb.Offset) {
		r.mu.Unlock()
		if r.remoteFenced() {
			return r.errRemoteFenced()
		}
		return r.serveRemote(ctx, fb, budget, out)
	}
	if errors.Is(err, replication.ErrOutOfRange) && fb.Offset < out.LogStartOffset && r.mgr.lake != nil && !r.closed && r.outOfServiceLocked() == nil {
		// Below the log, local and remote: the lake may hold it.
		r.mu.Unlock()
		if served, lerr := r.serveLake(ctx, fb, budget, out); served || lerr != nil {
			return lerr
		}
		return r.wireError(err)
	}
	if r.closed {
		err = replication.ErrNotLeader
	}
	failed := r.outOfServiceLocked()
	r.mu.Unlock()
	if failed != nil {
		return failed
	}
	if err != nil {
		return r.wireError(err)
	}
	if len(fb.Columns) > 0 {
		return r.readProjected(from, to, budget, r.projector(fb.Columns), out)
	}
	return r.readInto(from, to, budget, false, out)
}

// serveFollower handles a follower's fetch: the core checks its epoch and
// divergence and records its end offset (which may move the high watermark
// and propose it into the ISR); the batches after it go back. Followers get
// what is written, fsynced here or not, so they fetch and fsync while this
// leader fsyncs; the high watermark still waits for the leader's own
// durable end.
func (r *Replica) serveFollower(follower uint32, nodeEpoch uint64, fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return r.wireError(replication.ErrNotLeader)
	}
	if err := r.outOfServiceLocked(); err != nil {
		r.mu.Unlock()
		return err
	}
	written := r.log.WrittenEnd()
	out.LogStartOffset, out.LogEndOffset = r.log.StartOffset(), written
	if lost, start := r.lostCommittedLocked(fb); lost {
		// The follower learned a high watermark, in an earlier epoch, past
		// where this leader's epoch starts: the leader lost records that
		// were committed (durable on it before), as a disk that drops
		// fsynced writes does. Serving would make the follower truncate
		// them; the leader steps down as damaged instead, and an in-sync
		// replica that has them leads.
		r.mu.Unlock()
		r.noteLostCommitted(&logstore.CorruptError{Offset: start, SegmentBase: -1, Position: -1,
			Err: fmt.Errorf("follower %d's high watermark %d is past this leader's epoch start %d: committed records lost", follower, fb.HighWatermark, start)})
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"bucket %s: the leader on node %d lost committed records (its epoch starts at %d, follower %d's high watermark is %d) and is handing leadership to an in-sync replica",
			r.id, r.mgr.cfg.NodeID, start, follower, fb.HighWatermark)
	}
	eff := r.core.DurableEnd(r.log.EndOffset())
	oldest, _ := r.log.OldestEpoch()
	var snapshot int64
	var snapshotEpoch int32
	if s := r.newestKVSnapshot(); s != nil && r.kv != nil {
		snapshot, snapshotEpoch = s.Offset, s.LeaderEpoch
	}
	ans, fetchEff, err := r.core.ServeFetch(replication.FollowerFetch{Follower: follower, NodeEpoch: int64(nodeEpoch),
		LeaderEpoch: fb.LeaderEpoch, Offset: fb.Offset, LastFetchedEpoch: fb.LastFetchedEpoch},
		replication.LeaderLog{StartOffset: out.LogStartOffset, WrittenEnd: written, EpochEnd: r.log.EndOffsetForEpoch,
			OldestEpoch: oldest, Remote: r.remoteView(), SnapshotOffset: snapshot, SnapshotEpoch: snapshotEpoch}, time.Now())
	eff.Merge(fetchEff)
	r.performLocked(eff)
	out.LeaderEpoch, out.HighWatermark = ans.LeaderEpoch, ans.HW
	r.mu.Unlock()
	switch {
	case err != nil:
		return r.wireError(err)
	case ans.Diverging:
		out.Diverging, out.DivergingEpoch, out.DivergingEndOffset = true, ans.DivergingEpoch, ans.DivergingEnd
		return nil
	}
	return r.readInto(ans.From, ans.To, budget, true, out)
}

// ListOffsets answers earliest, latest (the high watermark) or by-timestamp
// offsets on the leader.
func (m *Manager) ListOffsets(ctx context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	id := BucketID{TableID: req.TableId, Bucket: req.Bucket}
	r := m.replica(id)
	if r == nil {
		return nil, m.missingReplica(id)
	}
	role, leader, epoch, hw := r.state()
	if role != replication.RoleLeader {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d does not lead bucket %s (leader: node %d)", m.cfg.NodeID, id, leader)
	}
	resp := &pb.ListOffsetsResponse{LeaderEpoch: epoch, HeldFrom: r.heldFrom()}
	switch req.Spec {
	case pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
		resp.Offset = r.log.StartOffset()
		if rl := r.remoteBefore(resp.Offset); rl != nil {
			resp.Offset = rl.StartOffset
		}
		resp.LogStartOffset = resp.Offset
		// The lake's records go before the log's when they join it: a
		// lake that ends below the log's start (it was off while the
		// log expired past it) starts nothing a reader could go on from.
		if !r.remoteFenced() { // a fenced lake is not offered (Lake 4)
			_, start, end, ok, err := r.lakeRange(ctx)
			if err != nil {
				return nil, err
			}
			if ok && start < resp.Offset && end >= resp.Offset {
				resp.Offset = start
			}
		}
	case pb.OffsetSpec_OFFSET_SPEC_LATEST:
		resp.Offset = hw
	case pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
		if rl := r.remoteBefore(r.log.StartOffset()); rl != nil && req.TimestampMs <= rl.MaxTimestamp {
			off, ok, err := m.cfg.Remote.OffsetForTimestamp(ctx, HandleOf(rl), req.TimestampMs)
			if err != nil {
				return nil, r.remoteError(rl.StartOffset, err)
			}
			if ok {
				resp.Offset = off
				return resp, nil
			}
		}
		off, ok, err := r.log.OffsetForTimestamp(req.TimestampMs)
		if err != nil {
			return nil, WireError(err)
		}
		resp.Offset = hw
		if ok && off < hw {
			resp.Offset = off
		}
	default:
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "unknown offset spec %v", req.Spec)
	}
	return resp, nil
}

// lostCommittedLocked says whether a follower's fetch shows this leader
// lost committed records: a follower whose last batch is from an earlier
// leader epoch names a high watermark past the start of this leader's
// epoch. A follower's high watermark is at most its own log end, and its
// batches from earlier epochs lie below this epoch's start unless they
// diverged; so a high watermark past it covers earlier-epoch records that
// were committed, durable on every in-sync replica, which a leader chosen
// from the ISR, or one restarted, holds: one that starts before them lost
// durable data. After an unclean
// election a leader may lack committed records by the operator's choice,
// and the check is off. With r.mu held.
func (r *Replica) lostCommittedLocked(fb *pb.FetchBucket) (bool, int64) {
	return r.core.LostCommitted(fb.LastFetchedEpoch, fb.HighWatermark, r.uncleanElections.Load() > 0), r.core.EpochStart()
}
