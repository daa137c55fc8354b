package replica

// An acks=0 write is answered before its fsync, but its records must still
// become durable and count for the high watermark like any other write's:
// nothing else would ask for that fsync (under SyncAlways only a waiting
// writer's fsync moves the durable end) or report the durable end to the
// core, so a bucket written with acks=0 alone never committed what it held
// and its consumers saw nothing until a later acks=1 or acks=all write
// moved the high watermark (issue 30).
//
// One background wait per replica at most: the acks=0 writes that arrive
// while it runs leave the newest of their waits for its next round, which
// covers them all (an fsync covers everything written before it).

// backgroundSync is the background durability of a replica's acks=0
// writes; under Replica.mu.
type backgroundSync struct {
	running bool
	// next waits until the newest acks=0 write not yet waited for is
	// durable, and nextEnd is that write's end offset; nil: none.
	next    func() error
	nextEnd int64
}

// syncInBackground has an acks=0 write whose records end at end made
// durable and reported to the core in the background; wait is its
// append's own.
func (r *Replica) syncInBackground(end int64, wait func() error) {
	r.mu.Lock()
	if r.bgSync.next == nil || end > r.bgSync.nextEnd {
		r.bgSync.next, r.bgSync.nextEnd = wait, end
	}
	start := !r.bgSync.running
	r.bgSync.running = true
	r.mu.Unlock()
	if start {
		// Once the manager closes nothing starts; closing the log fsyncs it.
		r.mgr.goBackground(r.runBackgroundSync)
	}
}

// runBackgroundSync waits for the pending acks=0 writes, round after
// round, until none is left or the node stops.
func (r *Replica) runBackgroundSync() {
	for {
		r.mu.Lock()
		wait := r.bgSync.next
		r.bgSync.next = nil
		if wait == nil {
			r.bgSync.running = false
		}
		r.mu.Unlock()
		if wait == nil {
			return
		}
		select {
		case <-r.mgr.stop:
			return
		default:
		}
		if err := wait(); err != nil {
			// As for a waiting writer: a failed fsync takes the replica
			// out of service; a truncation (the replica became a follower)
			// left nothing of this leader's to report.
			r.maybeFail(err)
			continue
		}
		r.reportDurable()
	}
}

// reportDurable tells the core the log is durable to its end as of the
// last sync: on a leader it may move the high watermark (and notifies
// followers and consumers when it does).
func (r *Replica) reportDurable() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failed == nil && !r.closed {
		r.performLocked(r.core.DurableEnd(r.log.EndOffset()))
	}
}
