package replica

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport/pb"
)

// waitHW waits until r's high watermark reaches want, on the manager's
// change signal (an advancing high watermark notifies it).
func waitHW(t *testing.T, r *Replica, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch := r.mgr.changes()
		_, _, _, hw := r.state()
		if hw >= want {
			return
		}
		if !r.mgr.waitChange(t.Context(), ch, deadline) {
			t.Fatalf("high watermark %d, log end %d (written %d): want %d", hw, r.log.EndOffset(), r.log.WrittenEnd(), want)
		}
	}
}

// TestAcksNoneWriteCommits (issue 30): a write with acks=0 is answered
// before its fsync, but its records still become durable and commit like
// any other's; before, nothing asked for the fsync or reported the durable
// end, so the high watermark (what consumers read up to) stayed put until
// a later acks=1 or acks=all write moved it.
func TestAcksNoneWriteCommits(t *testing.T) {
	for _, policy := range []logstore.SyncPolicy{logstore.SyncAlways, logstore.SyncInterval} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Run("alone", func(t *testing.T) {
				m := newTestManager(t, t.TempDir(), func(c *Config) { c.Log.Sync = policy })
				r := openTestReplica(t, m)
				t.Cleanup(func() { r.close(false) })
				lead(r, 1)
				resp, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 0, 3, "a"), AcksNone, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				waitHW(t, r, resp.LastOffset+1)
			})
			// With a follower in the ISR, the high watermark waits for both
			// the follower's fetch past the batch and the leader's own
			// durable end, whichever comes last.
			t.Run("with a follower", func(t *testing.T) {
				m := newTestManager(t, t.TempDir(), func(c *Config) { c.Log.Sync = policy })
				r := openTestReplica(t, m)
				m.mu.Lock()
				m.replicas[testBucket] = r
				m.tables[testBucket.TableID] = r.info.Load()
				m.mu.Unlock()
				r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 1,
					BucketEpoch: 1, Replicas: []uint32{1, 2}, Isr: []uint32{1, 2}}, 0)
				resp, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 0, 3, "a"), AcksNone, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				end := resp.LastOffset + 1
				if _, err := m.Fetch(t.Context(), &pb.FetchRequest{ReplicaId: 2, Buckets: []*pb.FetchBucket{{
					TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: end, LeaderEpoch: 1, LastFetchedEpoch: 1}}}); err != nil {
					t.Fatal(err)
				}
				waitHW(t, r, end)
			})
		})
	}
}

// TestAcksNoneFailedSyncNeverCommits: the background fsync of an acks=0
// write that fails counts for nothing, as a waiting writer's does: the
// replica goes out of service and its high watermark stays below the
// write (PROTOCOL, ISR changes 2a).
func TestAcksNoneFailedSyncNeverCommits(t *testing.T) {
	failed := make(chan error, 1)
	m := newTestManager(t, t.TempDir(), func(c *Config) {
		c.Log.FsyncFault = func(int64) error { return syscall.EIO }
		c.OnFail = func(err error) { failed <- err }
	})
	r := openTestReplica(t, m)
	t.Cleanup(func() { r.close(false) })
	lead(r, 1)
	if _, err := r.produce(context.Background(), nil, writerBatchN(t, 100, 0, 2, "a"), AcksNone, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if !errors.Is(err, logstore.ErrSyncFailed) {
			t.Fatalf("OnFail got %v, want the log's sync failure", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed background fsync did not take the replica out of service")
	}
	if role, _, _, hw := r.state(); role != replication.RoleNone || hw != 0 {
		t.Fatalf("after the failure: role %v, high watermark %d (want none, 0)", role, hw)
	}
}
