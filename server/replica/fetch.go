package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Fetch limits.
const (
	maxFetchWait       = 30 * time.Second
	defaultFetchBytes  = 1 << 20
	maxFetchBytesTotal = 12 << 20 // below the 16 MiB message limit
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
	for {
		ch := m.changes()
		resp, bytes, anyError := m.fetchOnce(req, total)
		if bytes >= int(max(req.MinBytes, 1)) || anyError || !time.Now().Before(deadline) {
			return resp, nil
		}
		if !m.waitChange(ctx, ch, deadline) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			resp, _, _ := m.fetchOnce(req, total)
			return resp, nil
		}
	}
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

// fetchOnce reads every requested bucket once.
func (m *Manager) fetchOnce(req *pb.FetchRequest, total int) (*pb.FetchResponse, int, bool) {
	resp := &pb.FetchResponse{Buckets: make([]*pb.FetchedBucket, 0, len(req.Buckets))}
	bytes, anyError := 0, false
	for _, fb := range req.Buckets {
		budget := int(fb.MaxBytes)
		if budget <= 0 {
			budget = defaultFetchBytes
		}
		budget = min(budget, total-bytes)
		out := &pb.FetchedBucket{TableId: fb.TableId, Bucket: fb.Bucket}
		id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
		var err error
		if r := m.replica(id); r == nil {
			err = m.missingReplica(id)
		} else if req.ReplicaId == 0 {
			err = r.serveConsumer(fb, budget, out)
		} else {
			err = r.serveFollower(req.ReplicaId, fb, budget, out)
		}
		if err != nil {
			var te *transport.Error
			if errors.As(err, &te) {
				out.ErrorCode, out.Error = te.Code, te.Error()
			} else {
				out.ErrorCode, out.Error = pb.ErrorCode_ERROR_CODE_INTERNAL, err.Error()
			}
			anyError = true
		}
		bytes += len(out.Records)
		resp.Buckets = append(resp.Buckets, out)
		if out.Diverging {
			anyError = true
		}
	}
	return resp, bytes, anyError
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
		return WireError(err)
	}
	out.Records = append([]byte(nil), recs.Data...)
	recs.Release()
	return nil
}

func (r *Replica) serveConsumer(fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) error {
	r.mu.Lock()
	role, epoch, hw, leader := r.role, r.leaderEpoch, r.hw, r.leaderID
	r.mu.Unlock()
	if role != roleLeader {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d does not lead bucket %s (leader: node %d)", r.mgr.cfg.NodeID, r.id, leader)
	}
	out.LeaderEpoch, out.HighWatermark = epoch, hw
	out.LogStartOffset, out.LogEndOffset = r.log.StartOffset(), r.log.EndOffset()
	if fb.Offset < out.LogStartOffset || fb.Offset > hw {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "offset %d outside [%d, %d] of bucket %s",
			fb.Offset, out.LogStartOffset, hw, r.id)
	}
	return r.readInto(fb.Offset, hw, budget, false, out)
}

// serveFollower handles a follower's fetch: epoch checks, divergence,
// recording its end offset (which may move the high watermark and the ISR),
// and the batches after it.
func (r *Replica) serveFollower(follower uint32, fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) error {
	r.mu.Lock()
	if r.role != roleLeader {
		leader := r.leaderID
		r.mu.Unlock()
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d does not lead bucket %s (leader: node %d)", r.mgr.cfg.NodeID, r.id, leader)
	}
	epoch := r.leaderEpoch
	switch {
	case fb.LeaderEpoch < epoch:
		r.mu.Unlock()
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_FENCED, "follower %d of bucket %s fetches in epoch %d, the leader is in %d", follower, r.id, fb.LeaderEpoch, epoch)
	case fb.LeaderEpoch > epoch:
		r.mu.Unlock()
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH, "follower %d of bucket %s is in epoch %d, this leader only knows %d", follower, r.id, fb.LeaderEpoch, epoch)
	case !slices.Contains(r.replicas, follower):
		r.mu.Unlock()
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_FENCED, "node %d is not a replica of bucket %s", follower, r.id)
	}
	out.LeaderEpoch = epoch
	// Followers get what is written, fsynced here or not: they fetch and
	// fsync while this leader fsyncs. The high watermark still waits for
	// the leader's own durable end (maybeAdvanceHWLocked).
	leo := r.log.WrittenEnd()
	out.LogStartOffset, out.LogEndOffset = r.log.StartOffset(), leo
	// Divergence (KIP-320): where does the follower's last epoch end here?
	if fb.LastFetchedEpoch >= 0 {
		ep, end, ok := r.log.EndOffsetForEpoch(fb.LastFetchedEpoch)
		if !ok || ep < fb.LastFetchedEpoch || end < fb.Offset {
			if !ok {
				ep, end = fb.LastFetchedEpoch, r.log.StartOffset()
			}
			out.Diverging, out.DivergingEpoch, out.DivergingEndOffset = true, ep, end
			out.HighWatermark = r.hw
			r.mu.Unlock()
			return nil
		}
	}
	if fb.Offset > leo || fb.Offset < out.LogStartOffset {
		out.HighWatermark = r.hw
		r.mu.Unlock()
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "follower %d of bucket %s fetches at %d, the leader holds [%d, %d]",
			follower, r.id, fb.Offset, out.LogStartOffset, leo)
	}
	f := r.followers[follower]
	if f == nil {
		f = &followerState{}
		r.followers[follower] = f
	}
	f.leo = fb.Offset
	if fb.Offset >= leo {
		f.caughtUpAt = time.Now()
	}
	r.maybeAdvanceHWLocked()
	r.maybeExpandISRLocked(follower)
	out.HighWatermark = r.hw
	r.mu.Unlock()
	return r.readInto(fb.Offset, leo, budget, true, out)
}

// ListOffsets answers earliest, latest (the high watermark) or by-timestamp
// offsets on the leader.
func (m *Manager) ListOffsets(_ context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	id := BucketID{TableID: req.TableId, Bucket: req.Bucket}
	r := m.replica(id)
	if r == nil {
		return nil, m.missingReplica(id)
	}
	role, leader, epoch, hw := r.state()
	if role != roleLeader {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d does not lead bucket %s (leader: node %d)", m.cfg.NodeID, id, leader)
	}
	resp := &pb.ListOffsetsResponse{LeaderEpoch: epoch}
	switch req.Spec {
	case pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
		resp.Offset = r.log.StartOffset()
	case pb.OffsetSpec_OFFSET_SPEC_LATEST:
		resp.Offset = hw
	case pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
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
