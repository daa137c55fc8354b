package kvreplica

import "sync"

// applier runs the catch-up rounds of the node's KV replicas on a fixed set
// of workers, so a replica costs a queue entry while its high watermark
// moves and nothing while it does not. A replica is queued at most once
// (kvReplica.queued); one woken while a worker catches it up is queued
// again, so no wake-up is lost.
type applier struct {
	workers int

	mu     sync.Mutex
	cond   sync.Cond
	queue  []*kvReplica // FIFO; each replica at most once
	closed bool
}

func (a *applier) init(workers int) {
	a.workers = workers
	a.cond.L = &a.mu
}

// wake queues kv for a catch-up round unless it is queued already.
func (a *applier) wake(kv *kvReplica) {
	if !kv.queued.CompareAndSwap(false, true) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.queue = append(a.queue, kv)
	a.cond.Signal()
}

// run is one worker: it catches up queued replicas until close.
func (a *applier) run() {
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.closed {
			a.cond.Wait()
		}
		if a.closed {
			a.mu.Unlock()
			return
		}
		kv := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		if len(a.queue) == 0 {
			a.queue = nil // let the backing array go after a burst
		}
		a.mu.Unlock()
		// Cleared before the round, so a wake-up during it queues the
		// replica again.
		kv.queued.Store(false)
		if kv.catchUp() {
			a.wake(kv) // more to apply: back of the queue, after the others
		}
	}
}

// close stops the workers once their current rounds end.
func (a *applier) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.queue = nil
	a.cond.Broadcast()
}
