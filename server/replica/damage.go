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
// elected.
//
// The only in-sync copy never does any of it (rule "damage and the last
// copy" 1): with ISR {self} the writes after the damage were acknowledged
// by this replica alone, and cutting its log would delete them. It keeps
// its log and its leadership, answers CORRUPT for the damaged batch, and
// serves the rest; so does a bucket with one replica. The controller
// applies the same rule to a report (the ISR may have shrunk to the
// reporter since it looked), and a replica whose report it left unchanged
// settles as the last copy (settleLastCopy).
//
// A lost tail (below) is different: nothing after the loss is left to
// keep, and the bucket goes offline until an unclean election, as after a
// wiped disk.

// damage is what a replica knows of damage in its log; under Replica.mu.
type damage struct {
	// at is the first damaged offset found and not yet cut away, -1: none.
	at int64
	// tailReported: the report of a lost tail (the core's
	// replication.Bucket.LostTail, below) went out.
	tailReported bool
	// kept is damage no other copy could repair, kept with the log
	// (keepDamageLocked), -1: none. Its reads answer CORRUPT.
	kept int64
}

// damageReportTimeout bounds one attempt of a damage report.
const damageReportTimeout = 10 * time.Second

// readError turns an error reading the log into the answer to the reader,
// starting damage handling when the log is damaged.
func (r *Replica) readError(err error) error {
	var ce *logstore.CorruptError
	if !errors.As(err, &ce) {
		return WireError(err)
	}
	if !r.noteDamage(ce) {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT,
			"bucket %s: the batch at offset %d is damaged on node %d, which holds the only in-sync copy; it keeps the records after it (read from the next batch on): %v",
			r.id, ce.Offset, r.mgr.cfg.NodeID, ce.Err)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
		"bucket %s: the replica on node %d found its log damaged at offset %d and is handing leadership to an in-sync replica: %v",
		r.id, r.mgr.cfg.NodeID, ce.Offset, ce.Err)
}

// noteDamage records damage at ce.Offset and reports it, once per damaged
// offset (a lower offset found later is reported again), unless the
// replica holds the only in-sync copy: then it reports false, and the
// damaged batch is answered CORRUPT while the replica keeps its log.
func (r *Replica) noteDamage(ce *logstore.CorruptError) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.otherInSyncCopyLocked() || ce.Offset == r.damage.kept {
		return false
	}
	r.noteLossLocked(ce, false)
	return true
}

// noteLostCommitted records that this leader lost records that were
// committed before its epoch (a follower saw a high watermark past its
// epoch start) and reports it as a loss, which takes even the ISR's last
// member out: a replica that has the records may lead after an unclean
// election. Its log is cut only if an in-sync replica holds the records.
func (r *Replica) noteLostCommitted(ce *logstore.CorruptError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteLossLocked(ce, true)
}

// noteLossLocked records damage at ce.Offset and reports it, once per
// offset. Holds mu.
func (r *Replica) noteLossLocked(ce *logstore.CorruptError, lost bool) {
	if r.closed || (r.damage.at >= 0 && r.damage.at <= ce.Offset) {
		return
	}
	r.damage.at = ce.Offset
	r.mgr.log.Error("replica log damaged: leaving the ISR to fetch it again", "bucket", r.id.String(),
		"offset", ce.Offset, "segment", ce.SegmentBase, "position", ce.Position, "err", ce.Err)
	r.sendDamageReportLocked(ce.Offset, ce.Error(), lost)
}

// otherInSyncCopyLocked reports whether a committed ISR member other than
// this replica holds the records, so that this one may leave the ISR and
// cut a damaged log back. Holds mu.
func (r *Replica) otherInSyncCopyLocked() bool { return r.core.OtherInSyncCopy() }

// settleLastCopy ends the handling of damage at offset that the
// controller left unchanged because this replica is the ISR's only member:
// it keeps its log, leads on, and answers CORRUPT for the damaged batch.
func (r *Replica) settleLastCopy(offset int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, tailLost := r.core.TailLost(); r.damage.at != offset || tailLost || r.otherInSyncCopyLocked() ||
		!slices.Contains(r.core.ISR(), r.mgr.cfg.NodeID) {
		return
	}
	r.damage.at = -1
	r.mgr.log.Error("replica log damaged, and it holds the only in-sync copy: keeping the log; reads of the damaged batch answer CORRUPT",
		"bucket", r.id.String(), "offset", offset)
}

// sendDamageReportLocked reports damage from offset on, in the background;
// lostTail says the log lost its tail there rather than holding a damaged
// batch.
func (r *Replica) sendDamageReportLocked(offset int64, reason string, lostTail bool) {
	report := &pb.ReportDamagedReplica{TableId: r.id.TableID, Bucket: r.id.Bucket, NodeId: r.mgr.cfg.NodeID,
		NodeEpoch: uint64(r.core.NodeEpoch()), Offset: offset, Reason: reason, LostTail: lostTail}
	requestID := []byte(fmt.Sprintf("damaged/%s/%d/%d/%d", r.id, r.mgr.cfg.NodeID, report.NodeEpoch, offset))
	r.mgr.goBackground(func() { r.reportDamage(report, requestID) })
}

// A replica whose log lost its tail (batches it had made durable are gone
// after a restart: logstore.Log.LostTail) is damaged from there on; the
// core refuses its writes and follower fetches until the loss is cut away
// (replication.Bucket.LostTail), and it reports the damage once it knows
// its assignment (the first metadata after opening).

// reportLostTail sends the lost tail's damage report, once, when the core
// says so (replication.Bucket.ReportLostTail): a bucket with one replica
// has nowhere to fetch from and carries on with what is left.
func (r *Replica) reportLostTail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	from, lost := r.core.TailLost()
	if !lost || r.damage.tailReported || r.closed {
		return
	}
	if !r.core.ReportLostTail() {
		r.mgr.log.Error("replica lost its log's tail and has no peer to fetch it from: serving what is left",
			"bucket", r.id.String(), "from_offset", from)
		r.damage.at = -1
		return
	}
	r.damage.tailReported = true
	r.mgr.log.Error("replica lost its log's tail: leaving the ISR to fetch it again", "bucket", r.id.String(),
		"from_offset", from)
	r.sendDamageReportLocked(from, fmt.Sprintf("batches made durable from offset %d on are missing after a restart", from), true)
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
			if !report.LostTail {
				r.settleLastCopy(report.Offset)
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
// is out of the ISR and another replica's ISR holds the records from there
// on; a lost tail (nothing after it to keep) is cut away in an offline
// bucket too. Holding them from there on is the leader's to say
// (ListOffsetsResponse.held_from): an in-sync replica restored from a KV
// snapshot starts its log at the snapshot, and what lies below may be on
// this replica alone. Then it keeps its log, damaged batch and all (as the
// last copy does: keepDamageLocked), and fetches on from its end.
func (r *Replica) repairDamage() {
	r.mu.Lock()
	at := r.damage.at
	_, lostTail := r.core.TailLost()
	_, leader, _, _ := r.stateLocked()
	mayCut := at >= 0 && r.core.MayCutDamaged(lostTail, at, at)
	r.mu.Unlock()
	if !mayCut {
		return
	}
	heldFrom := int64(0)
	if !lostTail {
		var ok bool
		if heldFrom, ok = r.leaderHeldFrom(leader, at); !ok {
			return
		}
	}
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	r.mu.Lock()
	_, stillLost := r.core.TailLost()
	sameDamage := r.damage.at == at && stillLost == lostTail
	mayCut = r.core.MayCutDamaged(lostTail, at, heldFrom)
	closed := r.closed || r.failed != nil
	if sameDamage && !mayCut && !closed && r.core.MayCutDamaged(lostTail, at, at) {
		r.keepDamageLocked(at, heldFrom)
	}
	r.mu.Unlock()
	if !sameDamage || !mayCut || closed {
		return
	}
	r.mgr.log.Info("cutting a damaged log back to fetch it again", "bucket", r.id.String(), "to_offset", at,
		"end_offset", r.log.EndOffset())
	if !r.cutLog(max(at, r.log.StartOffset())) {
		return
	}
	r.mu.Lock()
	if r.damage.at == at {
		r.damage.at = -1 // and the core forgot a lost tail: cutLog's Truncated
	}
	r.mu.Unlock()
}

// keepDamageLocked settles damage at offset that no other copy can repair:
// the leader's readable copies start at heldFrom, past it. The replica
// keeps its log and fetches on from its end; reads of the damaged batch,
// should it lead, answer CORRUPT. Holds mu.
func (r *Replica) keepDamageLocked(offset, heldFrom int64) {
	r.damage.at, r.damage.kept = -1, offset
	r.mgr.log.Error("replica log damaged, and the records after the damage are held by no other copy: keeping the log; reads of the damaged batch answer CORRUPT",
		"bucket", r.id.String(), "offset", offset, "leader_held_from", heldFrom)
}

// leaderHeldFrom asks the bucket's leader where its readable copies start,
// until it answers, the damage or the leader changes, or the node stops.
func (r *Replica) leaderHeldFrom(leader uint32, at int64) (int64, bool) {
	ctx, cancel := r.mgr.untilStopped(context.Background())
	defer cancel()
	pace := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: true}
	for {
		if leader == 0 {
			return 0, false // offline: the next metadata starts the repair again
		}
		actx, acancel := context.WithTimeout(ctx, damageReportTimeout)
		resp, err := r.mgr.cfg.Dialer.Tablet(r.mgr.nodeAddress(leader)).ListOffsets(actx, &pb.ListOffsetsRequest{
			TableId: r.id.TableID, Bucket: r.id.Bucket, Spec: pb.OffsetSpec_OFFSET_SPEC_EARLIEST})
		acancel()
		if err == nil {
			return resp.GetHeldFrom(), true
		}
		r.mu.Lock()
		_, now, _, _ := r.stateLocked()
		changed := r.damage.at != at || now != leader
		r.mu.Unlock()
		if ctx.Err() != nil || changed {
			return 0, false
		}
		r.mgr.log.Warn("asking the leader where its copies start, to repair a damaged log; retrying", "bucket", r.id.String(),
			"leader", leader, "err", err)
		if !pace.Wait(ctx) {
			return 0, false
		}
	}
}

// fetchable reports whether the fetcher asks the leader for the replica's
// batches: not while damage waits to be cut away (its log end would vouch
// for the damaged range) nor while it catches up in the background
// (catchuptask.go).
func (r *Replica) fetchable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.damage.at < 0 && !r.catchUp.running
}

// isDamaged reports whether damage was found and not cut away yet.
func (r *Replica) isDamaged() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.damage.at >= 0
}

// replicas is the bucket's assignment as the replica knows it.
func (r *Replica) replicas() []uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.core.Replicas()
}

// NoteDamage hands damage found outside a read (an upload's verification
// of a sealed segment) to the bucket's damage path, as a reader's would
// be. It reports false when the replica holds the only in-sync copy and
// keeps its log.
func (m *Manager) NoteDamage(id BucketID, ce *logstore.CorruptError) bool {
	r := m.replica(id)
	if r == nil {
		return false
	}
	role, _, _, _ := r.state()
	return role == replication.RoleLeader && r.noteDamage(ce)
}
