package client

import (
	"context"
	"sync"
)

// lookupQueue gathers the keys of one bucket that wait for a request.
type lookupQueue struct {
	bucket int32

	mu       sync.Mutex
	waiting  []*pendingKey
	inflight int // requests out, at most lookupsInFlightPerBucket
}

// pendingKey is one Lookup call's key and, once done is closed, its answer.
type pendingKey struct {
	key  []byte
	done chan struct{}
	row  []byte
	err  error
}

// enqueue adds p to q and, when q has room for another request in flight,
// takes the keys waiting for it and counts the request, which the caller
// then sends (serve, or at once when p is alone).
func (l *Lookuper) enqueue(q *lookupQueue, p *pendingKey) ([]*pendingKey, error) {
	l.mu.RLock() // a request counted here is one Close waits for
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrLookuperClosed
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting = append(q.waiting, p)
	if q.inflight == lookupsInFlightPerBucket {
		return nil, nil
	}
	q.inflight++
	l.wg.Add(1)
	return q.takeLocked(l.opts.MaxBatchKeys), nil
}

// takeLocked removes up to n waiting keys, oldest first.
func (q *lookupQueue) takeLocked(n int) []*pendingKey {
	n = min(n, len(q.waiting))
	batch := make([]*pendingKey, n)
	copy(batch, q.waiting)
	clear(q.waiting[:n])
	q.waiting = q.waiting[n:]
	if len(q.waiting) == 0 {
		q.waiting = nil // let the backing array go
	}
	return batch
}

// serve sends batch, then the keys that queued meanwhile, until none wait,
// and ends the request enqueue counted.
func (l *Lookuper) serve(q *lookupQueue, batch []*pendingKey) {
	defer l.wg.Done()
	for len(batch) > 0 {
		l.lookupPending(l.base, q.bucket, batch)
		batch = l.next(q)
	}
}

// next takes the keys that queued for q's request while it was out, or
// frees its place when none did.
func (l *Lookuper) next(q *lookupQueue) []*pendingKey {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.takeLocked(l.opts.MaxBatchKeys)
	if len(batch) == 0 {
		q.inflight--
	}
	return batch
}

// lookupPending sends one request for batch and completes its keys.
// parent is the lookuper's base context, or the context of the one caller
// whose key the batch holds; the request also ends when the lookuper closes.
func (l *Lookuper) lookupPending(parent context.Context, bucket int32, batch []*pendingKey) {
	ctx, cancel := context.WithTimeout(parent, l.opts.Timeout)
	defer cancel()
	if parent != l.base {
		defer context.AfterFunc(l.base, cancel)()
	}
	keys := make([][]byte, len(batch))
	for i, p := range batch {
		keys[i] = p.key
	}
	rows, err := l.lookupKeys(ctx, bucket, keys)
	if err != nil && l.isClosed() {
		err = ErrLookuperClosed
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.row = rows[i]
		}
		close(p.done)
	}
}
