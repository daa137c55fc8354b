package replica

import (
	"context"
	"errors"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A follower whose end is below its leader's local log start catches up
// from remote storage (catchup.go): object-store reads, maybe a whole KV
// snapshot's download. Done inside the fetcher's loop, that stalled every
// other bucket the node follows on the same leader for as long as it took
// (and they could drop out of their ISRs), so the fetcher hands such a
// bucket to a background task and fetches for the others meanwhile. The
// bucket is marked as catching up until the task ends: the fetcher leaves
// it out of its fetches, and it takes no client writes (a leader elected
// meanwhile, only by an unclean election, must not merge writes against a
// store being restored). Then it rejoins the fetches, which bring it the
// rest from its leader, or start another task if it is still behind.
//
// The task reads remote storage without the produce lock and takes the
// lock only to change the log, after checking that the replica still
// follows the same leader in the same epoch, is not damaged, and that its
// log ends where the task read from (lockFollowing); otherwise it
// discards what it read. A role change, the replica's close or failure,
// or the manager's close cancels it; each attempt has a deadline, and at
// most catchUpConcurrency run on a node at once.

// catchUpConcurrency bounds the catch-up tasks a node runs at once: each
// reads object storage at full speed, and a node that lost its disk would
// otherwise restore all of its buckets together.
const catchUpConcurrency = 4

// catchUpTimeout bounds one catch-up attempt, a KV snapshot's restore
// included (as kvreplica bounds a store's own restore).
const catchUpTimeout = 5 * time.Minute

// catchUpRetryMin and catchUpRetryMax pace the attempts of a follower
// whose catch-up fails (remote storage unreachable, the remote copies
// fenced, no snapshot to restore yet): the fetcher would otherwise start
// one on every fetch of the bucket.
const (
	catchUpRetryMin = 200 * time.Millisecond
	catchUpRetryMax = 5 * time.Second
)

// errCatchUpOutdated: the replica's role, epoch or log changed while its
// catch-up read remote storage; what it read is dropped.
var errCatchUpOutdated = pkgerr.New("replica", "the follower changed while it caught up: its catch-up is dropped")

// catchUp is a replica's background catch-up; under Replica.mu.
type catchUp struct {
	// running: a task runs (or waits for a slot); the replica is left out
	// of fetches and takes no writes until it ends.
	running bool
	cancel  context.CancelFunc // cancels the running task
	done    chan struct{}      // closed when the running task ended
	// retry paces the attempts after failures (owned by the running task:
	// one runs at a time; the zero value takes catchUpRetryMin/Max).
	retry backoff.Backoff
}

// stopLocked cancels the running task and returns the channel its end
// closes, nil when none runs. Holds Replica.mu.
func (c *catchUp) stopLocked() <-chan struct{} {
	if !c.running {
		return nil
	}
	c.cancel()
	return c.done
}

// catchingUp reports whether a catch-up task runs for the replica.
func (r *Replica) catchingUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.catchUp.running
}

// catchingUpErrorLocked refuses a write while the replica catches up;
// nil when it does not. Holds mu.
func (r *Replica) catchingUpErrorLocked() error {
	if !r.catchUp.running {
		return nil
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
		"bucket %s: the replica on node %d is catching up from remote storage", r.id, r.mgr.cfg.NodeID)
}

// startCatchUp hands the follower of leader at epoch, whose fetch fb said
// it is below the leader's log start, to a background catch-up task,
// unless one runs or the replica no longer follows so.
func (r *Replica) startCatchUp(leader uint32, epoch int32, fb *pb.FetchedBucket) {
	r.mu.Lock()
	role, curLeader, curEpoch, _ := r.stateLocked()
	if r.catchUp.running || role != replication.RoleFollower || curLeader != leader || curEpoch != epoch {
		r.mu.Unlock()
		return
	}
	ctx, cancel := r.mgr.untilStopped(context.Background())
	done := make(chan struct{})
	r.catchUp.running, r.catchUp.cancel, r.catchUp.done = true, cancel, done
	r.mu.Unlock()
	if !r.mgr.goBackground(func() { r.runCatchUp(ctx, leader, epoch, fb) }) {
		r.endCatchUp() // the manager is closing
	}
}

// endCatchUp ends the running task: the replica fetches again.
func (r *Replica) endCatchUp() {
	r.mu.Lock()
	r.catchUp.cancel()
	close(r.catchUp.done)
	r.catchUp.running, r.catchUp.cancel, r.catchUp.done = false, nil, nil
	r.mu.Unlock()
	r.mgr.notify()
}

// runCatchUp is the background task: one attempt in a slot, and after a
// failure a pause before the fetcher starts the next one.
func (r *Replica) runCatchUp(ctx context.Context, leader uint32, epoch int32, fb *pb.FetchedBucket) {
	defer r.endCatchUp()
	select {
	case r.mgr.catchUpSlots <- struct{}{}:
	case <-ctx.Done():
		return
	}
	from := r.log.EndOffset()
	r.mgr.log.Info("follower catching up from the remote log: its leader's local log starts past it",
		"bucket", r.id.String(), "leader", leader, "end_offset", from, "leader_start_offset", fb.LogStartOffset)
	started := time.Now()
	err := r.attemptCatchUp(ctx, leader, epoch, fb)
	<-r.mgr.catchUpSlots
	if err == nil {
		r.catchUp.retry.Reset()
		r.mgr.log.Info("follower caught up from the remote log: fetching from its leader again", "bucket", r.id.String(),
			"from_offset", from, "end_offset", r.log.EndOffset(), "took", time.Since(started).Round(time.Millisecond))
		return
	}
	switch {
	case ctx.Err() != nil:
		return // cancelled: the role changed, or the replica or node closes
	case errors.Is(err, errCatchUpOutdated):
		r.mgr.log.Debug("follower's catch-up dropped: the replica changed meanwhile", "bucket", r.id.String())
		return // the next fetch says what is needed now
	}
	r.mgr.log.Warn("follower cannot catch up below its leader's log start", "bucket", r.id.String(), "leader", leader,
		"end_offset", r.log.EndOffset(), "leader_start_offset", fb.LogStartOffset, "err", err)
	r.catchUp.retry.Min, r.catchUp.retry.Max, r.catchUp.retry.Jitter = catchUpRetryMin, catchUpRetryMax, true
	r.catchUp.retry.Wait(ctx)
}

// attemptCatchUp runs catchUpFromRemote under the attempt's deadline.
func (r *Replica) attemptCatchUp(ctx context.Context, leader uint32, epoch int32, fb *pb.FetchedBucket) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	return r.catchUpFromRemote(ctx, leader, epoch, fb)
}

// lockFollowing takes produceMu for a catch-up's change to the log, when
// the replica still follows leader at epoch, is neither damaged nor out of
// service, and its log still ends at end; release gives the lock back.
// Otherwise it returns errCatchUpOutdated, without the lock.
func (r *Replica) lockFollowing(leader uint32, epoch int32, end int64) (release func(), err error) {
	r.produceMu.Lock()
	r.mu.Lock()
	role, curLeader, curEpoch, _ := r.stateLocked()
	damaged := r.damage.at >= 0
	r.mu.Unlock()
	if role != replication.RoleFollower || curLeader != leader || curEpoch != epoch || damaged || r.log.EndOffset() != end {
		r.produceMu.Unlock()
		return nil, errCatchUpOutdated
	}
	return r.produceMu.Unlock, nil
}

// reportFetched tells the core the follower's log is durable to its end
// and the leader's high watermark was leaderHW, with produceMu held.
func (r *Replica) reportFetched(leader uint32, epoch int32, leaderHW int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.performLocked(r.core.Fetched(leader, epoch, leaderHW, r.log.EndOffset()))
}
