package replica

import (
	"context"
	"runtime"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// FetchSession is a follower node's fetch session on one Fetches stream:
// the buckets it fetches from this node with the positions it last named
// (KIP-227's incremental fetches). It lives as long as its stream, which
// serves one request at a time, so it needs no id, epoch, lock or
// eviction: a follower that loses the stream opens another and names
// everything again.
//
// An idle node's followers otherwise name every bucket they follow in every
// long poll and get every one back: with thousands of buckets, most of the
// CPU a node spends doing nothing. In a session a request names only what
// moved, an answer carries only what is new, and an idle bucket is served
// (its follower's fetch recorded by the core, which keeps the follower in
// the ISR) once per sessionRefresh instead of twice per poll.
type FetchSession struct {
	follower uint32
	buckets  map[BucketID]*sessionBucket
	order    []*sessionBucket // rotation order for answers cut by the byte budget
	turn     int
	// gen is Manager.followGen when the buckets' replicas were looked up:
	// a role, leader or replica change anywhere on the node looks them up
	// again and serves every bucket once.
	gen uint64
}

// sessionBucket is one bucket of a fetch session.
type sessionBucket struct {
	fb *pb.FetchBucket // as last named by the follower
	r  *Replica        // this node's replica; nil when it has none
	// named: named by a request and not served since. due: serve it on
	// the next pass.
	named, due bool
	servedAt   time.Time // the last time the core saw the follower's fetch of it
	// What the follower knows from this session's answers.
	told      bool
	toldHW    int64
	toldEpoch int32
	toldErr   pb.ErrorCode
	index     int // in order
}

// NewFetchSession starts a stream's fetch session.
func NewFetchSession() *FetchSession {
	return &FetchSession{buckets: map[BucketID]*sessionBucket{}}
}

// sessionRefresh is how often a session serves a bucket nothing happened
// to: the follower's fetch is recorded then, so it stays caught up in the
// leader's eyes. A quarter of the lag a follower may have before it leaves
// the ISR, at most two seconds.
func (m *Manager) sessionRefresh() time.Duration {
	return min(2*time.Second, m.cfg.ReplicaLagMax/4)
}

// maxSessionBuckets bounds a session: what one request may name.
const maxSessionBuckets = MaxFetchBuckets

// FetchInSession serves a follower's fetch on a stream that holds a fetch
// session; a request without session is served as Fetch serves it (and
// ends any session the stream held).
func (m *Manager) FetchInSession(ctx context.Context, s *FetchSession, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	if !req.Session || req.ReplicaId == 0 {
		s.reset(0)
		return m.Fetch(ctx, req)
	}
	if err := m.checkFollower(req.ReplicaId, req.NodeEpoch); err != nil {
		return nil, err
	}
	if err := s.apply(m, req); err != nil {
		return nil, err
	}
	wait := min(time.Duration(req.MaxWaitMs)*time.Millisecond, maxFetchWait)
	deadline := time.Now().Add(wait)
	total := int(req.MaxBytes)
	if total <= 0 || total > maxFetchBytesTotal {
		total = maxFetchBytesTotal
	}
	answer := map[BucketID]*pb.FetchedBucket{}
	var order []BucketID
	for last := false; ; {
		ch := m.changes()
		now := time.Now()
		last = last || !now.Before(deadline)
		any, refresh := s.mark(m, now)
		if any {
			resp, bytes, answerNow := m.fetchOnce(ctx, s.dueRequest(req), total)
			for _, fb := range s.served(resp, now) {
				id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
				if answer[id] == nil {
					order = append(order, id)
				}
				answer[id] = fb // a later serve of a bucket says everything an earlier one did
			}
			if bytes >= int(max(req.MinBytes, 1)) || answerNow {
				break
			}
		}
		if last {
			break
		}
		if !m.waitChange(ctx, ch, earlier(deadline, refresh)) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The deadline, a refresh, or the node stopping: after one
			// more pass the answer goes at the deadline or on a stop.
			last = !time.Now().Before(deadline) || m.stopping()
			continue
		}
		// Woken by a change, most often an append: as Fetch does, let the
		// appends that came with it write first, to answer them together.
		runtime.Gosched()
	}
	resp := &pb.FetchResponse{Session: true, Buckets: make([]*pb.FetchedBucket, 0, len(order))}
	for _, id := range order {
		resp.Buckets = append(resp.Buckets, answer[id])
	}
	return resp, nil
}

// reset empties the session for a follower.
func (s *FetchSession) reset(follower uint32) {
	s.follower = follower
	clear(s.buckets)
	s.order = s.order[:0]
	s.gen = 0
}

// apply takes a request's buckets into the session: all of them for a
// whole request, the named and forgotten ones for an incremental one.
func (s *FetchSession) apply(m *Manager, req *pb.FetchRequest) error {
	switch {
	case !req.Incremental:
		s.reset(req.ReplicaId)
	case req.ReplicaId != s.follower:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"an incremental fetch of node %d on a stream whose session is node %d's", req.ReplicaId, s.follower)
	}
	for _, ref := range req.Forgotten {
		id := BucketID{TableID: ref.TableId, Bucket: ref.Bucket}
		if sb := s.buckets[id]; sb != nil {
			delete(s.buckets, id)
			last := s.order[len(s.order)-1]
			s.order[sb.index], last.index = last, sb.index
			s.order = s.order[:len(s.order)-1]
		}
	}
	for _, fb := range req.Buckets {
		id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
		sb := s.buckets[id]
		if sb == nil {
			if len(s.buckets) >= maxSessionBuckets {
				return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
					"a fetch session holds at most %d buckets", maxSessionBuckets)
			}
			sb = &sessionBucket{index: len(s.order), r: m.replica(id)}
			s.buckets[id] = sb
			s.order = append(s.order, sb)
		}
		sb.fb, sb.named = fb, true
	}
	return nil
}

// mark decides which buckets the next pass serves: those named by the
// request and not served yet, and any with batches past the follower's
// position, a high watermark the follower was not told, a replica that
// changed, or no serve for sessionRefresh. It reports whether any is due,
// and when the next refresh is.
func (s *FetchSession) mark(m *Manager, now time.Time) (bool, time.Time) {
	lookup := false
	if gen := m.followGen.Load(); gen != s.gen {
		s.gen, lookup = gen, true
		m.mu.Lock()
		for id, sb := range s.buckets {
			sb.r = m.replicas[id]
		}
		m.mu.Unlock()
	}
	every := m.sessionRefresh()
	any, next := false, now.Add(every)
	for _, sb := range s.order {
		r := sb.r
		sb.due = sb.named || lookup || r == nil ||
			r.log.WrittenEnd() > sb.fb.Offset ||
			(sb.told && sb.toldErr == 0 && r.hwSeen.Load() != sb.toldHW) ||
			now.Sub(sb.servedAt) >= every
		if !sb.due {
			next = earlier(next, sb.servedAt.Add(every))
		}
		any = any || sb.due
	}
	return any, next
}

// dueRequest is the request serving the due buckets, from a turn that
// moves past the last bucket served: when the byte budget cuts an answer,
// the buckets it left out come first next time.
func (s *FetchSession) dueRequest(req *pb.FetchRequest) *pb.FetchRequest {
	out := &pb.FetchRequest{ReplicaId: req.ReplicaId, NodeEpoch: req.NodeEpoch, MinBytes: req.MinBytes, MaxBytes: req.MaxBytes}
	n := len(s.order)
	for i := range n {
		if sb := s.order[(s.turn+i)%n]; sb.due {
			out.Buckets = append(out.Buckets, sb.fb)
		}
	}
	return out
}

// served records what a pass served and returns the answers the follower
// needs: every bucket it named since the last serve (it moved, and what
// it was told, an error above all, may not hold where it is now: a
// replica restored from a KV snapshot below its leader's log start is
// refused with the same OUT_OF_RANGE as before, and must hear it again),
// and those with records, an error it was not told, a divergence, a
// remote reference, or a high watermark or leader epoch it was not told.
func (s *FetchSession) served(resp *pb.FetchResponse, now time.Time) []*pb.FetchedBucket {
	out := resp.Buckets[:0]
	for _, fb := range resp.Buckets {
		sb := s.buckets[BucketID{TableID: fb.TableId, Bucket: fb.Bucket}]
		if sb == nil {
			continue
		}
		asked := sb.named
		sb.named, sb.servedAt = false, now
		s.turn = (sb.index + 1) % len(s.order)
		news := asked || len(fb.Records) > 0 || fb.Diverging || fb.Remote != nil || !sb.told ||
			fb.ErrorCode != sb.toldErr || (fb.ErrorCode == 0 && (fb.HighWatermark != sb.toldHW || fb.LeaderEpoch != sb.toldEpoch))
		if !news {
			continue
		}
		sb.told, sb.toldErr = true, fb.ErrorCode
		if fb.ErrorCode == 0 {
			sb.toldHW, sb.toldEpoch = fb.HighWatermark, fb.LeaderEpoch
		}
		out = append(out, fb)
	}
	return out
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
