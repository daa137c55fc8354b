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
// starts one with the keys waiting.
func (l *Lookuper) enqueue(q *lookupQueue, p *pendingKey) error {
	l.mu.RLock() // a request started here is one Close waits for
	defer l.mu.RUnlock()
	if l.closed {
		return ErrLookuperClosed
	}
	q.mu.Lock()
	q.waiting = append(q.waiting, p)
	var batch []*pendingKey
	if q.inflight < lookupsInFlightPerBucket {
		batch = q.takeLocked(l.opts.MaxBatchKeys)
		q.inflight++
	}
	q.mu.Unlock()
	if batch != nil {
		l.wg.Go(func() { l.serve(q, batch) })
	}
	return nil
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

// serve sends batch, then the keys that queued meanwhile, until none wait.
func (l *Lookuper) serve(q *lookupQueue, batch []*pendingKey) {
	for len(batch) > 0 {
		l.lookupPending(q.bucket, batch)
		q.mu.Lock()
		batch = q.takeLocked(l.opts.MaxBatchKeys)
		if len(batch) == 0 {
			q.inflight--
		}
		q.mu.Unlock()
	}
}

// lookupPending sends one request for batch and completes its keys.
func (l *Lookuper) lookupPending(bucket int32, batch []*pendingKey) {
	ctx, cancel := context.WithTimeout(l.base, l.opts.Timeout)
	defer cancel()
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
