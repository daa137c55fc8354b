package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"

	"github.com/floedb/floe/transport/pb"
)

// sessionLeader is a leader node reached in-process that serves Fetches
// streams as the tablet service does: one fetch session per stream. It
// records each exchange.
type sessionLeader struct {
	pb.DRPCTabletClient
	m *Manager

	mu        sync.Mutex
	exchanges []sessionExchange
	streams   int
	breakNext bool // the next exchange fails, as a connection reset does
}

type sessionExchange struct {
	stream                     int
	session, incremental       bool
	named, forgotten, answered int
	answeredIDs                []BucketID
}

func (l *sessionLeader) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	return l.m.Fetch(ctx, req)
}

func (l *sessionLeader) Fetches(ctx context.Context) (pb.DRPCTablet_FetchesClient, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams++
	return &sessionStream{l: l, ctx: ctx, id: l.streams, session: NewFetchSession()}, nil
}

// since returns the exchanges after the first n.
func (l *sessionLeader) since(n int) []sessionExchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sessionExchange(nil), l.exchanges[min(n, len(l.exchanges)):]...)
}

func (l *sessionLeader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.exchanges)
}

type sessionStream struct {
	drpc.Stream
	l       *sessionLeader
	ctx     context.Context
	id      int
	session *FetchSession
	req     *pb.FetchRequest
}

func (s *sessionStream) Context() context.Context { return s.ctx }

func (s *sessionStream) Send(req *pb.FetchRequest) error {
	s.req = req
	return s.ctx.Err()
}

func (s *sessionStream) Recv() (*pb.FetchResponse, error) {
	s.l.mu.Lock()
	broken := s.l.breakNext
	s.l.breakNext = false
	s.l.mu.Unlock()
	if broken {
		return nil, errors.New("connection reset")
	}
	resp, err := s.l.m.FetchInSession(s.ctx, s.session, s.req)
	if err != nil {
		return nil, err
	}
	ex := sessionExchange{stream: s.id, session: resp.Session, incremental: s.req.Incremental,
		named: len(s.req.Buckets), forgotten: len(s.req.Forgotten), answered: len(resp.Buckets)}
	for _, fb := range resp.Buckets {
		ex.answeredIDs = append(ex.answeredIDs, BucketID{TableID: fb.TableId, Bucket: fb.Bucket})
	}
	s.l.mu.Lock()
	s.l.exchanges = append(s.l.exchanges, ex)
	s.l.mu.Unlock()
	return resp, nil
}

// sessionPair is node 2 leading a log table's buckets and node 1
// following them through fetch sessions.
type sessionPair struct {
	leader, follower *Manager
	link             *sessionLeader
	buckets          int
}

const sessionTable = 9

func startSessionPair(t *testing.T, buckets int, lagMax time.Duration) *sessionPair {
	t.Helper()
	update := &pb.MetadataUpdate{Full: true, Index: 10,
		Nodes: []*pb.NodeRecord{{Id: 1, RpcAddress: "node1", NodeEpoch: 1}, {Id: 2, RpcAddress: "node2", NodeEpoch: 1}},
		Tables: []*pb.TableRecord{{Id: sessionTable, Database: "db", Name: "events", Buckets: int32(buckets), Replication: 2,
			Schemas: []*pb.SchemaVersion{{Id: 1, Columns: []*pb.Column{{Name: "v", Type: "STRING"}}}}}},
	}
	for b := range buckets {
		update.Buckets = append(update.Buckets, &pb.BucketRecord{TableId: sessionTable, Bucket: int32(b), Leader: 2,
			LeaderEpoch: 1, BucketEpoch: 1, Replicas: []uint32{2, 1}, Isr: []uint32{2, 1}})
	}
	leader := newTestManager(t, t.TempDir(), func(c *Config) { c.NodeID = 2; c.ReplicaLagMax = lagMax })
	leader.Apply(update)
	link := &sessionLeader{m: leader}
	follower := newTestManager(t, t.TempDir(), func(c *Config) { c.Dialer = fixedDialer{link}; c.ReplicaLagMax = lagMax })
	follower.Apply(update)
	return &sessionPair{leader: leader, follower: follower, link: link, buckets: buckets}
}

// lagging lists the buckets whose leader counts node 1 as lagging now.
func (p *sessionPair) lagging() []int {
	var out []int
	for b := range p.buckets {
		r := p.leader.replica(BucketID{TableID: sessionTable, Bucket: int32(b)})
		r.mu.Lock()
		if len(r.core.Lagging(time.Now())) > 0 {
			out = append(out, b)
		}
		r.mu.Unlock()
	}
	return out
}

// TestFetchSessionIdleBucketsCostNothingAndStayInSync: a follower of many
// idle buckets names them once, when its session starts; after that its
// fetches name none and the answers carry none, yet the leader keeps
// counting it caught up on every bucket well past the lag a follower may
// have (it serves idle buckets at the session's refresh). A write to one
// bucket comes back in an answer naming only it, and only it is named
// again once copied.
func TestFetchSessionIdleBucketsCostNothingAndStayInSync(t *testing.T) {
	const buckets = 32
	lagMax := time.Second
	p := startSessionPair(t, buckets, lagMax)
	waitFor(t, 10*time.Second, "the session to hold every bucket and the first answers to be taken", func() bool {
		ex := p.link.since(0)
		if len(ex) == 0 || !ex[len(ex)-1].incremental || ex[len(ex)-1].named != 0 {
			return false
		}
		held := 0
		for _, e := range ex {
			if !e.incremental {
				held = 0
			}
			held += e.named - e.forgotten
		}
		return held >= buckets
	})

	// Idle for three times the lag a follower may have.
	mark := p.link.count()
	end := time.Now().Add(3 * lagMax)
	for time.Now().Before(end) {
		if l := p.lagging(); len(l) > 0 {
			t.Fatalf("the leader counts its idle follower lagging on buckets %v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	idle := p.link.since(mark)
	if len(idle) == 0 {
		t.Fatal("no fetch while idle")
	}
	for i, ex := range idle {
		if !ex.incremental || ex.named != 0 || ex.answered != 0 || ex.forgotten != 0 {
			t.Fatalf("idle fetch %d of %d: incremental %v, named %d, forgotten %d, answered %d; want an empty incremental exchange",
				i, len(idle), ex.incremental, ex.named, ex.forgotten, ex.answered)
		}
	}
	t.Logf("%d idle fetches named and answered no bucket", len(idle))

	// A write to bucket 5.
	id := BucketID{TableID: sessionTable, Bucket: 5}
	lr, fr := p.leader.replica(id), p.follower.replica(id)
	mark = p.link.count()
	produceLeader(t, lr, writerBatchN(t, 10, 0, 3, "x"))
	waitFor(t, 10*time.Second, "the follower to copy the write", func() bool { return fr.log.EndOffset() == lr.log.EndOffset() })
	waitFor(t, 10*time.Second, "the follower to name its new position", func() bool {
		for _, ex := range p.link.since(mark) {
			if ex.named > 0 {
				return true
			}
		}
		return false
	})
	for _, ex := range p.link.since(mark) {
		for _, a := range ex.answeredIDs {
			if a != id {
				t.Fatalf("an answer carried bucket %v; only %v was written", a, id)
			}
		}
		if ex.named > 1 {
			t.Fatalf("a fetch named %d buckets after a write to one", ex.named)
		}
	}
}

// TestFetchSessionStartsOverOnANewStream: a stream that fails takes its
// session with it; the follower's next stream names every bucket again,
// and a bucket it stops following is forgotten by the session.
func TestFetchSessionStartsOverOnANewStream(t *testing.T) {
	const buckets = 8
	p := startSessionPair(t, buckets, 10*time.Second)
	waitFor(t, 10*time.Second, "an incremental fetch", func() bool {
		ex := p.link.since(0)
		return len(ex) > 0 && ex[len(ex)-1].incremental
	})
	p.link.mu.Lock()
	p.link.breakNext = true
	p.link.mu.Unlock()
	waitFor(t, 10*time.Second, "a whole fetch on a second stream", func() bool {
		for _, ex := range p.link.since(0) {
			if ex.stream == 2 && !ex.incremental && ex.named == buckets && ex.session {
				return true
			}
		}
		return false
	})

	// Node 1 takes over bucket 3's leadership: it no longer fetches it.
	mark := p.link.count()
	rec := &pb.BucketRecord{TableId: sessionTable, Bucket: 3, Leader: 1, LeaderEpoch: 2, BucketEpoch: 2,
		Replicas: []uint32{2, 1}, Isr: []uint32{2, 1}}
	p.follower.replica(BucketID{TableID: sessionTable, Bucket: 3}).assign(rec, 11)
	p.follower.followGen.Add(1)
	waitFor(t, 10*time.Second, "the bucket to be forgotten", func() bool {
		for _, ex := range p.link.since(mark) {
			if ex.forgotten == 1 && ex.incremental {
				return true
			}
		}
		return false
	})
}

// TestFetchSessionRefusesAForeignIncrementalFetch: an incremental fetch
// of another node on a stream whose session is one node's is refused; a
// session is bounded.
func TestFetchSessionRefusesAForeignIncrementalFetch(t *testing.T) {
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.NodeID = 2 })
	s := NewFetchSession()
	whole := &pb.FetchRequest{ReplicaId: 1, Session: true, Buckets: []*pb.FetchBucket{{TableId: 1, Bucket: 0}}}
	if _, err := m.FetchInSession(t.Context(), s, whole); err != nil {
		t.Fatal(err)
	}
	_, err := m.FetchInSession(t.Context(), s, &pb.FetchRequest{ReplicaId: 3, Session: true, Incremental: true})
	wantCode(t, "a foreign incremental fetch", err, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "session is node 1's")

	big := &pb.FetchRequest{ReplicaId: 1, Session: true, Incremental: true}
	for b := range maxSessionBuckets {
		big.Buckets = append(big.Buckets, &pb.FetchBucket{TableId: 2, Bucket: int32(b)})
	}
	_, err = m.FetchInSession(t.Context(), s, big)
	wantCode(t, "a session past its bound", err, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, fmt.Sprintf("at most %d buckets", maxSessionBuckets))
}

// TestFetchSessionAnswersEveryNamedBucket: a bucket the follower names
// again is answered again, even with the error it was told before. A
// follower refused as behind its leader's log start restores a KV
// snapshot, still below that start, and names its new end: the same
// OUT_OF_RANGE is what sends it on to the remote log, and an answer
// that left it out (as unchanged news) left the replica out of the ISR
// for good.
func TestFetchSessionAnswersEveryNamedBucket(t *testing.T) {
	p := startSessionPair(t, 1, 10*time.Second)
	s := NewFetchSession()
	absent := &pb.FetchBucket{TableId: sessionTable, Bucket: 7, Offset: 0, LeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}
	fetch := func(incremental bool, fb *pb.FetchBucket) *pb.FetchResponse {
		t.Helper()
		resp, err := p.leader.FetchInSession(context.Background(), s, &pb.FetchRequest{ReplicaId: 1, NodeEpoch: 1,
			MaxWaitMs: 50, MinBytes: 1, MaxBytes: 1 << 20, Session: true, Incremental: incremental,
			Buckets: bucketsOf(fb)})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := fetch(false, absent)
	if len(first.Buckets) != 1 || first.Buckets[0].ErrorCode == 0 {
		t.Fatalf("first answer %v: want bucket 7 refused", first.Buckets)
	}
	again := proto.Clone(absent).(*pb.FetchBucket)
	again.Offset = 6000
	second := fetch(true, again)
	if len(second.Buckets) != 1 || second.Buckets[0].ErrorCode != first.Buckets[0].ErrorCode {
		t.Fatalf("answer to bucket 7 named again at a new position: %v; want the same refusal again", second.Buckets)
	}
	// Not named, the refusal it was told is not repeated.
	if third := fetch(true, nil); len(third.Buckets) != 0 {
		t.Fatalf("answer naming nothing: %v; want none", third.Buckets)
	}
}

func bucketsOf(fb *pb.FetchBucket) []*pb.FetchBucket {
	if fb == nil {
		return nil
	}
	return []*pb.FetchBucket{fb}
}

// scriptedLeader serves Fetches streams with answers a test scripts: each
// request's named buckets answered by answer.
type scriptedLeader struct {
	pb.DRPCTabletClient
	answer func(req *pb.FetchRequest) *pb.FetchResponse
	reqs   []*pb.FetchRequest
}

func (l *scriptedLeader) Fetches(ctx context.Context) (pb.DRPCTablet_FetchesClient, error) {
	return &scriptedStream{l: l, ctx: ctx}, nil
}

type scriptedStream struct {
	drpc.Stream
	l   *scriptedLeader
	ctx context.Context
	req *pb.FetchRequest
}

func (s *scriptedStream) Context() context.Context { return s.ctx }

func (s *scriptedStream) Send(req *pb.FetchRequest) error {
	s.req = req
	s.l.reqs = append(s.l.reqs, req)
	return nil
}

func (s *scriptedStream) Recv() (*pb.FetchResponse, error) { return s.l.answer(s.req), nil }

// TestFollowerSessionAppliesAnswersAfterACatchUp: a round in which every
// replica the fetcher follows catches up from remote storage sends
// nothing; the answer the next round gets for the replica must still be
// applied. The fetcher's session kept reading that round's bookkeeping
// (the replica left out of the replicas to apply answers to, as catching
// up) while naming the replica from the earlier answer: its answers were
// dropped, its position stayed named, and it was never named again, a
// replica restored from a KV snapshot out of the ISR for good.
func TestFollowerSessionAppliesAnswersAfterACatchUp(t *testing.T) {
	refuse := false
	leader := &scriptedLeader{answer: func(req *pb.FetchRequest) *pb.FetchResponse {
		resp := &pb.FetchResponse{Session: !refuse}
		for _, b := range req.Buckets {
			fb := &pb.FetchedBucket{TableId: b.TableId, Bucket: b.Bucket, LeaderEpoch: 1}
			if refuse {
				fb.ErrorCode, fb.Error = pb.ErrorCode_ERROR_CODE_NOT_LEADER, "not leader: node 2 is follower (leader: node 3)"
			}
			resp.Buckets = append(resp.Buckets, fb)
		}
		return resp
	}}
	m, r := followerOfNode2(t, leader, []uint32{1, 2})
	f := &fetcher{m: m, leader: 2, ctx: t.Context()}
	if err := f.fetchOnce([]*Replica{r}); err != nil {
		t.Fatal(err)
	}
	// The replica catches up from remote storage; the fetcher's next round
	// reads every position (a role changed somewhere) and has nothing to
	// fetch.
	r.mu.Lock()
	r.catchUp.running = true
	r.mu.Unlock()
	f.gen++
	if err := f.fetchOnce([]*Replica{r}); !errors.Is(err, errNothingToFetch) {
		t.Fatalf("round while catching up: %v, want errNothingToFetch", err)
	}
	r.mu.Lock()
	r.catchUp.running = false
	r.mu.Unlock()
	// Caught up: the next answer for the replica is a refusal, which the
	// fetcher applies and, in an answer without session, backs off from.
	refuse = true
	err := f.fetchOnce([]*Replica{r})
	if err == nil || !strings.Contains(err.Error(), "refused every bucket") {
		last := leader.reqs[len(leader.reqs)-1]
		t.Fatalf("round after the catch-up = %v, want the refusal applied (its request named %d buckets, incremental %v)",
			err, len(last.Buckets), last.Incremental)
	}
}
