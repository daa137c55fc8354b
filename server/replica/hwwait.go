package replica

import (
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// hwWaiter is a write waiting for the high watermark to pass offset: its
// channel is closed when it has, or when the replica's role or epoch
// changes (the waiter then looks again).
type hwWaiter struct {
	offset int64
	ch     chan struct{}
}

// wakeHWWaitersLocked releases the waiters the high watermark has passed,
// with r.mu held: only they wake, not every write waiting on the node.
func (r *Replica) wakeHWWaitersLocked() {
	r.hwWaiters = slices.DeleteFunc(r.hwWaiters, func(w hwWaiter) bool {
		if w.offset < r.core.HW() {
			close(w.ch)
			return true
		}
		return false
	})
}

// wakeAllHWWaitersLocked releases every waiter, with r.mu held: the role,
// the epoch or the replica's life changed.
func (r *Replica) wakeAllHWWaitersLocked() {
	for _, w := range r.hwWaiters {
		close(w.ch)
	}
	r.hwWaiters = nil
}

// dropHWWaiterLocked forgets a waiter that stopped waiting.
func (r *Replica) dropHWWaiterLocked(ch chan struct{}) {
	r.hwWaiters = slices.DeleteFunc(r.hwWaiters, func(w hwWaiter) bool { return w.ch == ch })
}

// waitCommitted waits until the core acknowledges an acks=all write whose
// last offset is offset, appended in epoch: the high watermark passed it
// with min.insync.replicas in the ISR.
func (r *Replica) waitCommitted(ctx context.Context, offset int64, epoch int32, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
				"bucket %s closed while the write waited for replicas; its outcome is unknown", r.id)
		}
		done, err := r.core.AckAll(offset, epoch)
		if done || err != nil {
			r.mu.Unlock()
			return r.wireError(err)
		}
		ch := make(chan struct{})
		r.hwWaiters = append(r.hwWaiters, hwWaiter{offset: offset, ch: ch})
		r.mu.Unlock()
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
			err = transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT,
				"bucket %s: in-sync replicas did not confirm offset %d within %v", r.id, offset, timeout)
		case <-r.mgr.stop:
			err = transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node shutting down")
		}
		r.mu.Lock()
		r.dropHWWaiterLocked(ch)
		r.mu.Unlock()
		return err
	}
}
