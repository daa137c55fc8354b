package replica

import (
	"errors"
	"fmt"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A replica whose log failed (an fsync or write error) no longer knows what
// its disk holds: a failed fsync may have dropped pages the kernel will
// never write again, and an fsync that later succeeds says nothing about
// them. Counting anything past the last good sync as durable could
// acknowledge a write that a crash then loses, so the replica stops at
// once: it leads and follows nothing, answers every request with a
// retriable error (clients move on to the new leader), and reports the
// failure so the node stops. Restarting recovers the log to its last
// durable point; the restarted node re-registers, which raises the epochs
// of what it led, and catches up from the new leaders.

// storageFailure reports whether err is the disk failing under the log, as
// opposed to a refused request: an I/O error from the file system.
func storageFailure(err error) bool {
	return errors.Is(err, logstore.ErrSyncFailed)
}

// maybeFail takes the replica out of service when err is a storage failure.
func (r *Replica) maybeFail(err error) {
	if !storageFailure(err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failLocked(err)
}

// failLocked takes the replica out of service, with r.mu held.
func (r *Replica) failLocked(err error) {
	if r.failed != nil || r.closed {
		return
	}
	r.failed = fmt.Errorf("bucket %s: log failed: %w", r.id, err)
	r.mgr.log.Error("replica out of service: its log failed, so it can no longer say what is durable; "+
		"restart the node to recover the log to its last durable point", "bucket", r.id.String(), "err", err)
	r.wakeAllHWWaitersLocked()
	r.catchUp.stopLocked()
	if r.kv != nil {
		r.kv.SetLeading(false)
	}
	r.mgr.followGen.Add(1)
	r.mgr.notify()
	if fn := r.mgr.cfg.OnFail; fn != nil {
		failed := r.failed
		go fn(failed)
	}
}

// outOfServiceLocked is the error a failed replica answers with (nil when
// it serves), with r.mu held. It is retriable: another replica serves.
func (r *Replica) outOfServiceLocked() error {
	if r.failed == nil {
		return nil
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d: replica out of service: %v", r.mgr.cfg.NodeID, r.failed)
}
