package kvreplica

import (
	"context"
	"sync"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// barrierTimeout bounds how long one barrier waits to commit.
const barrierTimeout = 10 * time.Second

// barrierRound is one barrier batch that a group of linearizable lookups
// waits for.
type barrierRound struct {
	done   chan struct{}
	offset int64 // of the barrier batch
	epoch  int32 // it was appended in
	err    error
}

// barrierQueue runs barriers one at a time. Lookups that arrive while a
// barrier is out join the next round, which starts when it ends: a lookup
// only ever trusts a barrier appended after it arrived, and any number of
// lookups share one.
type barrierQueue struct {
	kv *kvReplica

	mu      sync.Mutex
	next    *barrierRound // the round new lookups join; nil: none yet
	running bool
	closed  bool
}

// wait joins the next barrier round and waits for it. It returns the
// barrier's offset and the leader epoch it committed in.
func (q *barrierQueue) wait(ctx context.Context) (int64, int32, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, 0, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "replica closing")
	}
	round := q.next
	if round == nil {
		round = &barrierRound{done: make(chan struct{})}
		q.next = round
	}
	if !q.running {
		q.running = true
		q.next = nil
		q.kv.wg.Go(func() { q.run(round) })
	}
	q.mu.Unlock()
	select {
	case <-round.done:
		return round.offset, round.epoch, round.err
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// run runs round, then every round lookups joined meanwhile.
func (q *barrierQueue) run(round *barrierRound) {
	for {
		round.offset, round.epoch, round.err = q.kv.appendBarrier()
		close(round.done)
		q.mu.Lock()
		round = q.next
		q.next = nil
		if round == nil || q.closed {
			q.running = false
			q.mu.Unlock()
			if round != nil {
				round.err = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "replica closing")
				close(round.done)
			}
			return
		}
		q.mu.Unlock()
	}
}

// close refuses new rounds; the running one ends within barrierTimeout or
// when the replica stops leading.
func (q *barrierQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// appendBarrier appends a barrier in the current leader epoch and waits,
// up to barrierTimeout or until the replica closes, until it commits.
func (kv *kvReplica) appendBarrier() (int64, int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), barrierTimeout)
	defer cancel()
	go func() {
		select {
		case <-kv.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return kv.r.AppendBarrier(ctx, barrierTimeout)
}
