package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A replica whose log turns out damaged (a batch that fails its checksum,
// found when the leader reads it for a consumer or a follower) cannot vouch
// for what it holds from there on, and the copies on the other replicas are
// intact. So the replica reports the damage to the controller, which takes
// it out of the ISR and, if it led, hands leadership to an in-sync replica
// with a new epoch (ReportDamagedReplica). Once the metadata shows it out
// of the ISR, where truncating below the high watermark endangers nothing,
// it cuts its log back to the damaged offset and fetches the rest again
// from the leader, rejoining the ISR when caught up. It never cuts its log
// while in the ISR: an in-sync replica missing acknowledged data could be
// elected. A bucket whose only in-sync replica is damaged goes offline
// until an unclean election, as after a wiped disk.
//
// A bucket with one replica has nowhere to fetch from: its reads of the
// damaged range fail with CORRUPT and nothing else changes.

// damageReportTimeout bounds one attempt of a damage report.
const damageReportTimeout = 10 * time.Second

// readError turns an error reading the log into the answer to the reader,
// starting damage handling when the log is damaged.
func (r *Replica) readError(err error) error {
	var ce *logstore.CorruptError
	if !errors.As(err, &ce) {
		return WireError(err)
	}
	if len(r.replicas()) < 2 {
		return WireError(err)
	}
	r.noteDamage(ce)
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
		"bucket %s: the replica on node %d found its log damaged at offset %d and is handing leadership to an in-sync replica: %v",
		r.id, r.mgr.cfg.NodeID, ce.Offset, ce.Err)
}

// noteDamage records damage at ce.Offset and reports it, once per damaged
// offset: a lower offset found later is reported again.
func (r *Replica) noteDamage(ce *logstore.CorruptError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (r.damagedAt >= 0 && r.damagedAt <= ce.Offset) {
		return
	}
	r.damagedAt = ce.Offset
	r.mgr.log.Error("replica log damaged: leaving the ISR to fetch it again", "bucket", r.id.String(),
		"offset", ce.Offset, "segment", ce.SegmentBase, "position", ce.Position, "err", ce.Err)
	report := &pb.ReportDamagedReplica{TableId: r.id.TableID, Bucket: r.id.Bucket, NodeId: r.mgr.cfg.NodeID,
		NodeEpoch: uint64(r.core.NodeEpoch()), Offset: ce.Offset, Reason: ce.Error()}
	requestID := []byte(fmt.Sprintf("damaged/%s/%d/%d/%d", r.id, r.mgr.cfg.NodeID, report.NodeEpoch, ce.Offset))
	r.mgr.goBackground(func() { r.reportDamage(report, requestID) })
}

// reportDamage sends the report until the controller answers it (every
// attempt under the same request id, so it applies once), the manager
// closes, or the answer is a refusal a retry cannot change.
func (r *Replica) reportDamage(report *pb.ReportDamagedReplica, requestID []byte) {
	ctx, cancel := r.mgr.untilStopped(context.Background())
	defer cancel()
	pace := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: true}
	for {
		actx, acancel := context.WithTimeout(ctx, damageReportTimeout)
		b, err := r.mgr.cfg.Meta.ReportDamaged(actx, report, requestID)
		acancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			r.mgr.log.Info("damaged replica reported", "bucket", r.id.String(), "offset", report.Offset,
				"leader", b.GetLeader(), "isr", b.GetIsr())
			if b != nil {
				r.mgr.applyBucket(b, 0)
			}
			return
		case !transport.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded):
			r.mgr.log.Error("damaged replica report refused", "bucket", r.id.String(), "err", err)
			return
		}
		r.mgr.log.Warn("damaged replica report not answered; retrying", "bucket", r.id.String(), "err", err)
		if !pace.Wait(ctx) {
			return
		}
	}
}

// repairDamage cuts the log back to the damaged offset once the replica
// is out of the ISR and follows (or the bucket is offline).
func (r *Replica) repairDamage() {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	r.mu.Lock()
	at := r.damagedAt
	role, _, _, _ := r.stateLocked()
	inISR := slices.Contains(r.core.ISR(), r.mgr.cfg.NodeID)
	closed := r.closed || r.failed != nil
	r.mu.Unlock()
	if at < 0 || inISR || role == replication.RoleLeader || closed {
		return
	}
	r.mgr.log.Info("cutting a damaged log back to fetch it again", "bucket", r.id.String(), "to_offset", at,
		"end_offset", r.log.EndOffset())
	if !r.cutLog(max(at, r.log.StartOffset())) {
		return
	}
	r.mu.Lock()
	if r.damagedAt == at {
		r.damagedAt = -1
	}
	r.mu.Unlock()
}

// isDamaged reports whether damage was found and not cut away yet.
func (r *Replica) isDamaged() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.damagedAt >= 0
}

// replicas is the bucket's assignment as the replica knows it.
func (r *Replica) replicas() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.core.Replicas()
}
