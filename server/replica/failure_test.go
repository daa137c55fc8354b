package replica

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
)

// TestFailedSyncTakesReplicaOutOfService (bug 8): a leader whose fsync
// fails answers the write with a retriable error, stops leading at once
// (its high watermark never counts the unsynced batch), refuses later
// writes retriably, and reports the failure so the node stops.
func TestFailedSyncTakesReplicaOutOfService(t *testing.T) {
	var failing atomic.Bool
	failed := make(chan error, 1)
	m := newTestManager(t, t.TempDir(), func(c *Config) {
		c.Log.Sync = logstore.SyncAlways
		c.Log.FsyncFault = func(int64) error {
			if failing.Load() {
				return syscall.EIO
			}
			return nil
		}
		c.OnFail = func(err error) { failed <- err }
	})
	r := openTestReplica(t, m)
	t.Cleanup(func() { r.close(false) })
	lead(r, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 2, "a"))
	hw := r.core.HW()

	failing.Store(true)
	_, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 1, 2, "b"), AcksAll, 5*time.Second)
	if !errors.Is(err, transport.ErrNotLeader) {
		t.Fatalf("write whose fsync failed: want a retriable NOT_LEADER, got %v", err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, logstore.ErrSyncFailed) {
			t.Fatalf("OnFail got %v, want the log's sync failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnFail was not called")
	}
	if role, _, _, got := r.state(); role != replication.RoleNone || got != hw {
		t.Fatalf("after the failure: role %v, high watermark %d (want none, %d)", role, got, hw)
	}
	failing.Store(false) // a later fsync that succeeds proves nothing
	_, err = r.produce(context.Background(), nil, writerBatchN(t, 100, 1, 2, "b"), AcksLeader, 5*time.Second)
	if !transport.IsRetriable(err) {
		t.Fatalf("write to a failed replica: want retriable, got %v", err)
	}
	if got := r.core.HW(); got != hw {
		t.Fatalf("high watermark moved to %d after the failure (was %d)", got, hw)
	}
}
