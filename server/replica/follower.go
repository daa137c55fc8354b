package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/floedb/floe/internal/fanout"
	"github.com/floedb/floe/internal/pkgerr"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// fetcher pulls, for every bucket this node follows on one leader node, the
// leader's new batches in one long-polling Fetch at a time.
type fetcher struct {
	m      *Manager
	leader uint32
	ctx    context.Context
	cancel context.CancelFunc

	// reps are the replicas following leader as of Manager.followGen gen
	// (owned by run).
	reps []*Replica
	gen  uint64

	// stream is the open Fetches stream to the leader node at streamAddr,
	// nil when none is; endStream cancels it. unary: the leader node
	// serves no Fetches stream (an older version), so each fetch is one
	// Fetch call. All owned by run.
	stream     pb.DRPCTablet_FetchesClient
	streamAddr string
	endStream  context.CancelFunc
	unary      bool
	// turn is where the next fetch's window starts when more replicas
	// follow leader than one request may name (MaxFetchBuckets). Owned
	// by run.
	turn int
	// sess is the fetch session on stream, nil when none. Owned by run.
	sess *followerSession
}

// fetchTimeout bounds one fetch: the leader's long poll and a margin.
const fetchTimeout = DefaultFollowerMaxWait + 5*time.Second

// fetch sends one fetch to the leader node at addr and returns its answer:
// on the fetcher's stream to the node, opened on first use, or as one
// call to a node that serves no stream. One fetch is out at a time, so
// the stream carries exactly the sequence of calls the follower would
// make, at one write each way per fetch instead of a call's opening and
// closing packets. A failed or late answer ends the stream; the next
// fetch opens another.
func (f *fetcher) fetch(addr string, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	if f.unary {
		if req.Incremental {
			// Named only what changed, for a session on a stream that is
			// gone: the next round names everything.
			return nil, errSessionLost
		}
		ctx, cancel := context.WithTimeout(f.ctx, fetchTimeout)
		defer cancel()
		resp, err := f.m.cfg.Dialer.Tablet(addr).Fetch(ctx, req)
		if err != nil {
			f.unary = false // the node may be back upgraded: the next fetch tries a stream again
		}
		return resp, err
	}
	var resp *pb.FetchResponse
	err := f.streamTo(addr)
	if err == nil && f.unary {
		return f.fetch(addr, req)
	}
	if err == nil {
		late := time.AfterFunc(fetchTimeout, f.endStream)
		resp, err = exchangeFetch(f.stream, req)
		if !late.Stop() || err != nil {
			f.closeStream()
		}
	}
	if err != nil && isUnknownRPC(err) {
		f.unary = true
		f.m.log.Info("leader node serves no fetch stream: fetching with single calls", "leader", f.leader, "err", err)
		return f.fetch(addr, req)
	}
	return resp, err
}

// streamTo makes the fetcher's stream one to the leader node at addr,
// opening one unless it is open; a node that serves no stream turns the
// fetcher to single calls (unary).
func (f *fetcher) streamTo(addr string) error {
	if f.unary {
		return nil
	}
	if f.stream != nil && f.streamAddr != addr {
		f.closeStream() // the leader node moved
	}
	err := f.openStream(addr)
	if err != nil && isUnknownRPC(err) {
		f.unary = true
		f.m.log.Info("leader node serves no fetch stream: fetching with single calls", "leader", f.leader, "err", err)
		return nil
	}
	return err
}

// openStream opens a stream to the leader node at addr unless one is open.
func (f *fetcher) openStream(addr string) error {
	if f.stream != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(f.ctx)
	st, err := f.m.cfg.Dialer.Tablet(addr).Fetches(ctx)
	if err != nil {
		cancel()
		return err
	}
	f.stream, f.streamAddr, f.endStream = st, addr, cancel
	return nil
}

// exchangeFetch sends req on st and receives its answer.
func exchangeFetch(st pb.DRPCTablet_FetchesClient, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	// A send fails with io.EOF once the leader ended the stream; the
	// receive then says why.
	if err := st.Send(req); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	resp, err := st.Recv()
	if errors.Is(err, io.EOF) {
		return nil, errFetchStreamEnded
	}
	return resp, err
}

// errFetchStreamEnded: the leader node ended the fetch stream without an
// error (it is shutting down its connections).
var errFetchStreamEnded = pkgerr.New("replica", "the leader node ended the fetch stream")

// errSessionLost: an incremental fetch lost the stream its session was on.
var errSessionLost = pkgerr.New("replica", "the fetch session's stream is gone")

// closeStream ends the fetcher's stream, if one is open.
func (f *fetcher) closeStream() {
	if f.stream == nil {
		return
	}
	f.endStream()
	f.stream, f.streamAddr, f.endStream = nil, "", nil
}

// isUnknownRPC reports whether err is a node's answer to a method it does
// not serve (DRPC's mux names it "unknown rpc").
func isUnknownRPC(err error) bool {
	return strings.Contains(err.Error(), "unknown rpc")
}

// following returns the replicas following the leader, listing them again
// only when a role may have changed since the last time: a round costs
// the buckets it fetches for, not every replica of the node. A replica
// that stopped following since is skipped when the answer comes.
func (f *fetcher) following() []*Replica {
	if gen := f.m.followGen.Load(); f.reps == nil || gen != f.gen {
		f.reps, f.gen = f.m.followedBy(f.leader), gen
	}
	return f.reps
}

// ensureFetcher starts the fetcher for a leader node if none runs.
func (m *Manager) ensureFetcher(leader uint32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.fetchers[leader] != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, leader: leader, ctx: ctx, cancel: cancel}
	m.fetchers[leader] = f
	m.wg.Add(1)
	go f.run()
}

func (f *fetcher) run() {
	defer f.m.wg.Done()
	defer f.closeStream()
	retry := backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second, Jitter: true}
	for f.ctx.Err() == nil {
		reps := f.following()
		if len(reps) == 0 {
			// Nothing to follow on this leader any more: stop, unless a
			// bucket arrives meanwhile (ensureFetcher restarts us then).
			f.m.mu.Lock()
			if len(f.m.followedByLocked(f.leader)) == 0 {
				delete(f.m.fetchers, f.leader)
				f.m.mu.Unlock()
				return
			}
			f.m.mu.Unlock()
			continue
		}
		if err := f.fetchOnce(reps); err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.m.log.Debug("follower fetch failed", "leader", f.leader, "err", err)
			if !retry.Wait(f.ctx) {
				return
			}
			continue
		}
		retry.Reset()
	}
}

// errNothingToFetch: every replica following the leader waits for its
// damaged log to be cut back or catches up from remote storage; the
// fetcher backs off meanwhile.
var errNothingToFetch = pkgerr.New("replica", "every replica to fetch for waits for its damage to be cut away or catches up")

// fetchOnce sends one Fetch for the given replicas and applies the answer.
// On a stream whose leader node keeps a fetch session it names only the
// buckets whose position changed since it last named them there.
func (f *fetcher) fetchOnce(reps []*Replica) error {
	addr := f.m.nodeAddress(f.leader)
	if addr == "" {
		return errNoAddress
	}
	useSession := len(reps) <= MaxFetchBuckets
	if !useSession {
		// More than a request may name: a window of them, moving on
		// each round, so each is fetched in turn.
		start := f.turn % len(reps)
		reps = slices.Concat(reps[start:], reps[:start])[:MaxFetchBuckets]
		f.turn += MaxFetchBuckets
	}
	if err := f.streamTo(addr); err != nil {
		return err
	}
	sess := f.session(useSession)
	incremental := sess != nil && sess.open
	req := &pb.FetchRequest{ReplicaId: f.m.cfg.NodeID, NodeEpoch: f.m.NodeEpoch(),
		MaxWaitMs: int32(DefaultFollowerMaxWait / time.Millisecond), MinBytes: 1, MaxBytes: maxFetchBytesTotal,
		Session: sess != nil, Incremental: incremental}
	// fetching: every bucket fetched this round and what it names; the
	// request carries, in a session, only those the leader node does not
	// have as they are.
	now := time.Now()
	admitLearners := f.m.throttle.admit(now)
	var fetching map[BucketID]fetchPosition
	var byID map[BucketID]*Replica
	if incremental && !sess.recheck(f.gen, admitLearners, now) {
		// The replicas, roles and learner admission are as when every
		// position was last read: only the replicas the last answer
		// carried may have moved since (the fetcher's own appends, a
		// truncation, a new high watermark).
		fetching, byID = sess.named, sess.byID
		for _, r := range sess.moved {
			pos, ok := r.fetchPosition()
			if !ok || (!admitLearners && r.learner.Load()) {
				delete(byID, r.id)
				if _, held := fetching[r.id]; held {
					delete(fetching, r.id)
					req.Forgotten = append(req.Forgotten, &pb.FetchBucketRef{TableId: r.id.TableID, Bucket: r.id.Bucket})
				}
				continue
			}
			byID[r.id] = r
			if held, ok := fetching[r.id]; !ok || held != pos {
				fetching[r.id] = pos
				req.Buckets = append(req.Buckets, pos.bucket(r.id))
			}
		}
	} else {
		fetching = make(map[BucketID]fetchPosition, len(reps))
		byID = make(map[BucketID]*Replica, len(reps))
		for _, r := range reps {
			pos, ok := r.fetchPosition()
			if !ok || (!admitLearners && r.learner.Load()) {
				continue
			}
			fetching[r.id], byID[r.id] = pos, r
			if incremental && sess.named[r.id] == pos {
				continue
			}
			req.Buckets = append(req.Buckets, pos.bucket(r.id))
		}
		if incremental {
			for id := range sess.named {
				if _, ok := fetching[id]; !ok {
					req.Forgotten = append(req.Forgotten, &pb.FetchBucketRef{TableId: id.TableID, Bucket: id.Bucket})
				}
			}
		}
		if sess != nil {
			sess.gen, sess.admitted, sess.readAt, sess.byID = f.gen, admitLearners, now, byID
		}
	}
	if len(fetching) == 0 {
		// The session's bookkeeping took this round's changes, which go
		// unsent: the next round starts a session over, naming everything.
		f.sess = nil
		return errNothingToFetch
	}
	resp, err := f.fetch(addr, req)
	if err != nil {
		return err
	}
	if sess != nil {
		sess.took(fetching, resp.Session)
	}
	type answer struct {
		r  *Replica
		fb *pb.FetchedBucket
	}
	answered := make([]answer, 0, len(resp.Buckets))
	once := make(map[BucketID]bool, len(resp.Buckets))
	for _, fb := range resp.Buckets {
		id := BucketID{TableID: fb.TableId, Bucket: fb.Bucket}
		if _, ok := fetching[id]; ok && byID[id] != nil && !once[id] {
			once[id] = true // a bucket answered twice is applied once: its produce lock is held until released below
			answered = append(answered, answer{byID[id], fb})
		}
	}
	if sess != nil {
		sess.moved = sess.moved[:0]
		for _, an := range answered {
			sess.moved = append(sess.moved, an.r)
		}
	}
	// In bucket order: two fetchers whose answers come in across a change
	// of leaders may lock some of the same replicas at once (doc.go).
	slices.SortFunc(answered, func(a, b answer) int {
		return cmp.Or(cmp.Compare(a.r.id.TableID, b.r.id.TableID), cmp.Compare(a.r.id.Bucket, b.r.id.Bucket))
	})
	refused, learnt := 0, 0
	var appended []*fetchedAppend
	for _, an := range answered {
		if an.r.learner.Load() {
			learnt += len(an.fb.Records)
		}
		a, ok := an.r.appendFetched(f.leader, fetching[an.r.id].epoch, an.fb)
		if !ok {
			refused++
		}
		if a != nil {
			appended = append(appended, a)
		}
	}
	if learnt > 0 {
		f.m.events.moveBytes.Add(int64(learnt))
		f.m.throttle.take(time.Now(), learnt)
	}
	syncFetched(appended)
	for _, a := range appended {
		a.report()
		a.release()
	}
	if refused > 0 && refused == len(resp.Buckets) && !resp.Session {
		// The leader node refuses every bucket (it no longer leads them
		// and this node has not heard yet): back off rather than ask again
		// at once, until the metadata names the new leader. A session
		// tells a refusal once, and serves the bucket again only when
		// something changes or at its refresh: nothing to back off from.
		return fmt.Errorf("leader node %d refused every bucket, first: %s", f.leader, resp.Buckets[0].Error)
	}
	return nil
}

// fetchPosition is what a follower names of a bucket in a fetch.
type fetchPosition struct {
	offset    int64 // the durable log end
	epoch     int32 // the leader epoch the replica follows in
	lastEpoch int32 // the epoch of its last batch, -1 for an empty log
	hw        int64
}

// fetchPosition is what the replica names in a follower fetch; ok false
// when it fetches nothing now (it waits for damage to be cut away or
// catches up from remote storage).
func (r *Replica) fetchPosition() (fetchPosition, bool) {
	r.mu.Lock()
	ok := r.damage.at < 0 && !r.catchUp.running
	_, _, epoch, hw := r.stateLocked()
	r.mu.Unlock()
	end := r.log.EndOffset()
	return fetchPosition{offset: end, epoch: epoch, lastEpoch: r.log.EpochBefore(end), hw: hw}, ok
}

// bucket is the position as a fetch names it.
func (p fetchPosition) bucket(id BucketID) *pb.FetchBucket {
	return &pb.FetchBucket{TableId: id.TableID, Bucket: id.Bucket, Offset: p.offset, LeaderEpoch: p.epoch,
		LastFetchedEpoch: p.lastEpoch, MaxBytes: DefaultFollowerFetchBytes, HighWatermark: p.hw}
}

// followerSession is a follower's side of the fetch session on its stream
// to a leader node (fetchsession.go): what it last named of each bucket,
// which the leader node holds once it said it keeps the session (open).
type followerSession struct {
	stream pb.DRPCTablet_FetchesClient
	open   bool
	named  map[BucketID]fetchPosition
	// byID are the replicas fetched as of the last time every position
	// was read: at the fetcher's gen, with learners admitted or not, at
	// readAt. moved are the replicas the last answer carried.
	byID     map[BucketID]*Replica
	gen      uint64
	admitted bool
	readAt   time.Time
	moved    []*Replica
}

// positionRecheck is how often a session's fetcher reads the position of
// every replica, not only of those the last answer carried: what moves a
// position otherwise (a damaged tail cut away, a catch-up from remote
// storage ending) is seen within it.
const positionRecheck = time.Second

// recheck reports whether every position must be read again: the
// replicas following the leader or the learners' admission changed, or
// positionRecheck passed.
func (s *followerSession) recheck(gen uint64, admitted bool, now time.Time) bool {
	return s.byID == nil || gen != s.gen || admitted != s.admitted || now.Sub(s.readAt) >= positionRecheck
}

// session returns the fetch session of the fetcher's stream, a new one
// for a new stream; nil when none is used (single calls, or more buckets
// than one request may name).
func (f *fetcher) session(use bool) *followerSession {
	if !use || f.unary || f.stream == nil {
		f.sess = nil
		return nil
	}
	if f.sess == nil || f.sess.stream != f.stream {
		f.sess = &followerSession{stream: f.stream}
	}
	return f.sess
}

// took records an answered request: the leader node holds fetching as
// named, if it keeps the session.
func (s *followerSession) took(fetching map[BucketID]fetchPosition, kept bool) {
	s.open = kept
	s.named = nil
	if kept {
		s.named = fetching
	}
}

// followerSyncConcurrency bounds the fsyncs one follower fetch runs at
// once: enough for the disk to take them together (the file system's
// journal commits them as a group), few enough not to queue behind each
// other in the device.
const followerSyncConcurrency = 16

// fetchedAppend is one bucket of a follower fetch whose batches are
// written and not yet durable. Its replica's produce lock is held from
// appendFetched until release, so no role change or truncation slips
// between the write and the durable end the core learns (report).
type fetchedAppend struct {
	r       *Replica
	leader  uint32
	epoch   int32
	hw      int64
	wait    func() error // waits for the batches to be durable
	err     error        // what wait returned
	release func()       // gives back the produce lock appendFetched took
}

// appendFetched applies one bucket of a follower fetch up to the durable
// wait: truncation on divergence, or writing the batches. It reports
// false when the leader refused the bucket. It returns the written bucket
// for syncFetched and report, holding the produce lock until its release
// is called, or nil, holding nothing, when done with it already.
func (r *Replica) appendFetched(leader uint32, epoch int32, fb *pb.FetchedBucket) (*fetchedAppend, bool) {
	r.produceMu.Lock()
	a, ok := r.writeFetched(leader, epoch, fb)
	if a == nil {
		r.produceMu.Unlock()
		return nil, ok
	}
	a.release = r.produceMu.Unlock
	return a, ok
}

// writeFetched is appendFetched's work, with produceMu held.
func (r *Replica) writeFetched(leader uint32, epoch int32, fb *pb.FetchedBucket) (*fetchedAppend, bool) {
	role, curLeader, curEpoch, _ := r.state()
	if role != replication.RoleFollower || curLeader != leader || curEpoch != epoch || r.catchingUp() {
		return nil, true // the role changed while the fetch was out
	}
	if r.behindLeaderStart(fb) {
		// Remote storage has what it lacks: a background task brings it,
		// while this fetcher goes on for the other buckets.
		r.startCatchUp(leader, epoch, fb)
		return nil, true
	}
	if fb.Error != "" {
		r.mgr.log.Debug("follower fetch refused", "bucket", r.id.String(), "leader", leader, "err", fb.Error)
		return nil, false
	}
	if fb.Diverging {
		r.truncateDiverged(leader, epoch, fb)
		return nil, true
	}
	a := &fetchedAppend{r: r, leader: leader, epoch: epoch, hw: fb.HighWatermark, wait: func() error { return nil }}
	if len(fb.Records) > 0 {
		_, wait, err := r.log.AppendReplicatedPending(fb.Records)
		if err != nil {
			r.mgr.log.Error("append replicated batches", "bucket", r.id.String(), "err", err)
			r.maybeFail(err)
			return nil, true
		}
		a.wait = wait
		it := record.NewBatchIterator(fb.Records, false)
		for it.Next() {
			r.writers.table.record(it.Batch())
		}
	}
	return a, true
}

// syncFetched waits until the written buckets of a fetch are durable,
// running up to followerSyncConcurrency of their fsyncs at once: one
// after another, a fetch of many buckets would cost the sum of their
// fsyncs instead of about the longest.
func syncFetched(appended []*fetchedAppend) {
	fanout.Each(appended, followerSyncConcurrency, func(a *fetchedAppend) { a.err = a.wait() })
}

// report gives the core the follower's new durable end and the leader's
// high watermark (the core moves its own to the minimum of the two), with
// the produce lock still held.
func (a *fetchedAppend) report() {
	r := a.r
	if a.err != nil {
		r.mgr.log.Error("append replicated batches", "bucket", r.id.String(), "err", a.err)
		r.maybeFail(a.err)
		return
	}
	r.reportFetched(a.leader, a.epoch, a.hw)
}

// truncate cuts the log back to offset, with produceMu held, dropping the
// writer-state snapshot first: a snapshot past a truncation would vouch for
// batches the log no longer holds.
func (r *Replica) truncate(offset int64) error {
	if err := r.dropWriterSnapshot(); err != nil {
		return err
	}
	return r.log.Truncate(offset)
}

// truncateDiverged truncates the log where the leader of epoch says it
// diverged (KIP-320), with produceMu held. When that leaves batches below
// the leader's start that it could not judge, a background task has the
// remote log judge them (judgeBelowStart).
func (r *Replica) truncateDiverged(leader uint32, epoch int32, fb *pb.FetchedBucket) {
	to := replication.TruncationPoint(fb.DivergingEpoch, fb.DivergingEndOffset, r.log.EndOffsetForEpoch)
	r.mgr.log.Info("truncating diverged log", "bucket", r.id.String(), "leader", leader, "to_offset", to,
		"end_offset", r.log.EndOffset(), "diverging_epoch", fb.DivergingEpoch)
	if r.cutLog(to) && r.unjudgedBelowStart(fb) {
		r.startCatchUp(leader, epoch, fb)
	}
}

// cutLog truncates the log back to offset, with produceMu held, and drops
// what was built from the truncated tail: writer state, the KV side's state
// above it, the core's durable end. It reports whether the log was cut.
func (r *Replica) cutLog(to int64) bool {
	if err := r.truncate(to); err != nil {
		r.mgr.log.Error("truncate", "bucket", r.id.String(), "to_offset", to, "err", err)
		r.maybeFail(err)
		return false
	}
	if err := r.rebuildWriters(); err != nil {
		r.mgr.log.Error("rebuild writer state", "bucket", r.id.String(), "err", err)
	}
	if r.kv != nil {
		r.kv.DropAbove(r.log.EndOffset())
	}
	r.mu.Lock()
	r.core.Truncated(r.log.EndOffset())
	r.mu.Unlock()
	return true
}
