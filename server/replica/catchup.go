package replica

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// remoteCatchUpTimeout bounds one catch-up read from remote storage
// (within the attempt's catchUpTimeout).
const remoteCatchUpTimeout = 30 * time.Second

// behindLeaderStart says the leader refused a follower fetch because the
// follower's end is below the leader's local log start: retention (after
// tiering, or log.ttl) deleted what the follower still needs there.
func (r *Replica) behindLeaderStart(fb *pb.FetchedBucket) bool {
	return fb.ErrorCode == pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE && r.log.EndOffset() < fb.LogStartOffset
}

// catchUpFromRemote brings a follower whose end is below its leader's
// local log start (behindLeaderStart) up to that start, as fb (the
// leader's answer) showed it, step after step (catchUpStep). It runs in a
// background task (catchuptask.go), not holding produceMu but for each
// change to the log.
func (r *Replica) catchUpFromRemote(ctx context.Context, leader uint32, epoch int32, fb *pb.FetchedBucket) error {
	for ctx.Err() == nil {
		more, err := r.catchUpStep(ctx, leader, epoch, fb)
		if err != nil || !more {
			return err
		}
	}
	return ctx.Err()
}

// catchUpStep takes one step of catchUpFromRemote and reports whether
// more are needed:
//
//   - the committed remote log holds the follower's end: copy the next
//     batches from there (the leader's own, committed and identical on
//     every replica), as much as one fetch would bring, made durable and
//     reported like fetched ones;
//   - what the follower lacks is gone everywhere (below the remote log's
//     start, or there is no remote log): a log table's replica starts over
//     empty where the cluster's data starts, the remote start or else the
//     leader's local start. A primary-key replica restores its newest KV
//     snapshot when one fits, else it cannot (its store needs every
//     change): it waits, saying why.
func (r *Replica) catchUpStep(ctx context.Context, leader uint32, epoch int32, fb *pb.FetchedBucket) (bool, error) {
	if r.remoteFenced() {
		return false, r.errRemoteFenced() // they may hold another history: wait for the cut
	}
	end := r.log.EndOffset()
	if r.unjudgedBelowStart(fb) {
		return r.judgeBelowStart(ctx, leader, epoch, fb)
	}
	if end >= fb.LogStartOffset {
		return false, nil // the leader has the rest
	}
	rl := r.remote.log.Load()
	// A remote log with a gap (a leader restored from a KV snapshot) holds
	// every offset only from its newest run's start: below it a follower
	// could not build a log without a hole.
	covered := HandleOf(rl).CoveredFrom()
	// A primary-key replica this far behind takes its newest committed KV
	// snapshot, then the changelog after it, rather than replaying all.
	// The changelog after its offset must be there: on the leader, or in
	// the remote log up to the leader's start.
	replayable := func(offset int64) bool {
		return offset >= fb.LogStartOffset || (rl.GetSegments() > 0 && offset >= covered && rl.EndOffset >= fb.LogStartOffset)
	}
	if ok, err := r.restoreFromSnapshot(ctx, leader, epoch, fb.HighWatermark, replayable); ok || err != nil {
		return false, err
	}
	readable := r.mgr.cfg.Remote != nil && rl != nil
	if r.kv == nil && end == r.log.StartOffset() {
		// An empty log (a replica a move added, or one whose disk was
		// lost) starts at the leader's log start: below it the remote
		// log holds the history, where readers find it, so a move copies
		// the bucket's local tail, not all it ever held.
		return false, r.startOverAt(ctx, leader, epoch, end, fb.LogStartOffset, fb.HighWatermark, slog.LevelInfo,
			"empty follower log: starting it at its leader's log start")
	}
	if readable && end >= covered && end < rl.EndOffset {
		if cut, err := r.truncateToRemote(ctx, leader, epoch); err != nil || cut {
			return cut, err // after a cut, the next step goes on from the new end
		}
		data, err := r.readRemoteFrom(ctx, end, DefaultFollowerFetchBytes)
		if err != nil {
			return false, err
		}
		if r.learner.Load() {
			r.mgr.events.moveBytes.Add(int64(len(data)))
			if err := r.mgr.throttle.wait(ctx, len(data)); err != nil {
				return false, err
			}
		}
		return true, r.appendRemote(leader, epoch, end, fb.HighWatermark, data)
	}
	start := fb.LogStartOffset
	if rl != nil && rl.Segments > 0 && covered < start && rl.EndOffset >= start {
		if !readable {
			return false, fmt.Errorf("the leader's local log starts at %d and this node has no remote storage to read the rest from (give it the cluster's --remote-dir or --s3-* flags)", start)
		}
		start = covered // what lies below the follower's end there is gone
	}
	if r.kv != nil {
		// The changelog it lacks is gone and no snapshot covers it: a
		// store cannot skip changes.
		return false, fmt.Errorf("the cluster holds offsets from %d on, this primary-key replica ends at %d, and no KV snapshot it can read starts at or past %d", start, end, start)
	}
	return false, r.startOverAt(ctx, leader, epoch, end, start, fb.HighWatermark, slog.LevelWarn,
		"follower's log ends below what the cluster still holds: starting it over there")
}

// startOverAt starts the follower's log, which ends at end, over at start
// (startOver), with the writer state of the remote log there, if it still
// follows leader at epoch and ends at end.
func (r *Replica) startOverAt(ctx context.Context, leader uint32, epoch int32, end, start, leaderHW int64, level slog.Level, why string) error {
	writers := r.remoteWriters(ctx, start)
	release, err := r.lockFollowing(leader, epoch, end)
	if err != nil {
		return err
	}
	defer release()
	r.mgr.log.Log(ctx, level, why, "bucket", r.id.String(), "end_offset", end, "start_offset", start, "leader", leader)
	if err := r.startOver(start, writers); err != nil {
		return err
	}
	r.reportFetched(leader, epoch, leaderHW)
	return nil
}

// unjudgedBelowStart says that fb, a divergence the leader answered at
// its start, leaves this follower's log ending there with batches below
// it that the leader could not judge (replication.UnjudgedBelowStart).
func (r *Replica) unjudgedBelowStart(fb *pb.FetchedBucket) bool {
	return fb.Diverging && replication.UnjudgedBelowStart(fb.DivergingEndOffset, fb.LogStartOffset,
		r.log.StartOffset(), r.log.EndOffset())
}

// judgeBelowStart is catchUpStep for a follower whose log ends at its
// leader's start with batches below it that the leader could not judge
// (unjudgedBelowStart): the remote log judges them where it holds them
// (truncateToRemote), and cuts what it holds in another epoch; the
// catch-up goes on from the new end. What it does not cut goes: the log
// starts over, empty, at the leader's start (the remote log holds and
// serves those batches; a primary-key replica's store keeps their
// effect), unless they may be the only copies
// (replication.MayDropBelowStart): then it waits, out of the ISR, until
// log.ttl expires them or a KV snapshot covers them.
func (r *Replica) judgeBelowStart(ctx context.Context, leader uint32, epoch int32, fb *pb.FetchedBucket) (bool, error) {
	if rl := r.remote.log.Load(); rl != nil && rl.GetSegments() > 0 {
		if r.mgr.cfg.Remote == nil {
			return false, fmt.Errorf("the leader's local log starts at %d and cannot judge this replica's batches below it, and this node has no remote storage to (give it the cluster's --remote-dir or --s3-* flags)", fb.LogStartOffset)
		}
		if cut, err := r.truncateToRemote(ctx, leader, epoch); err != nil || cut {
			return cut, err
		}
	}
	var newest int64
	if s := r.newestKVSnapshot(); s != nil {
		newest = s.Offset
	}
	if v := r.remoteView(); !replication.MayDropBelowStart(r.log.StartOffset(), fb.LogStartOffset, v, r.kv != nil, newest) {
		return false, fmt.Errorf("the leader's local log starts at %d and cannot judge this replica's batches from %d below it, which the remote log (holding [%d, %d)) does not all hold: waiting for log.ttl or a KV snapshot to cover them",
			fb.LogStartOffset, r.log.StartOffset(), v.CoveredFrom, v.End)
	}
	end := r.log.EndOffset()
	writers := r.remoteWriters(ctx, end)
	release, err := r.lockFollowing(leader, epoch, end)
	if err != nil {
		return false, err
	}
	defer release()
	r.mgr.log.Warn("follower's batches below its leader's start predate the leader's log: the remote log holds them, dropping them",
		"bucket", r.id.String(), "start_offset", r.log.StartOffset(), "end_offset", end, "leader", leader)
	if err := r.startOver(end, writers); err != nil {
		return false, err
	}
	r.reportFetched(leader, epoch, fb.HighWatermark)
	return false, nil
}

// appendRemote appends batches read from the remote log at the
// follower's end end, makes them durable and reports them to the core,
// as a fetch's would be.
func (r *Replica) appendRemote(leader uint32, epoch int32, end, leaderHW int64, data []byte) error {
	release, err := r.lockFollowing(leader, epoch, end)
	if err != nil {
		return err
	}
	defer release()
	_, wait, err := r.log.AppendReplicatedPending(data)
	if err == nil {
		for it := record.NewBatchIterator(data, false); it.Next(); {
			r.writers.table.record(it.Batch())
		}
		err = wait()
	}
	if err != nil {
		r.maybeFail(err)
		return err
	}
	r.reportFetched(leader, epoch, leaderHW)
	return nil
}

// startOver starts the log over, empty, at offset, with writers as its
// writer state, with produceMu held; the writer-state snapshot goes first
// (it would vouch for batches the log no longer holds).
func (r *Replica) startOver(offset int64, writers *writerTable) error {
	if err := r.dropWriterSnapshot(); err != nil {
		return err
	}
	if err := r.log.Reset(offset); err != nil {
		r.maybeFail(err)
		return err
	}
	r.writers.table = writers
	return nil
}

// remoteWriters is the writer state of a replica starting over at offset:
// what the remote segments before it remember (retries of batches there
// are still recognized), or an empty table when there is none to read.
func (r *Replica) remoteWriters(ctx context.Context, offset int64) *writerTable {
	t := newWriterTable()
	rl := r.remote.log.Load()
	if r.mgr.cfg.Remote == nil || rl == nil {
		return t
	}
	ws, err := r.mgr.cfg.Remote.WritersBefore(ctx, HandleOf(rl), offset)
	if err != nil {
		r.mgr.log.Warn("reading the writer state of remote segments; retries of earlier batches may be taken as new",
			"bucket", r.id.String(), "offset", offset, "err", err)
		return t
	}
	for _, w := range ws {
		t.Remember(w.WriterID, replication.WriterBatch{Seq: w.Sequence, Base: w.BaseOffset, Last: w.LastOffset, TimestampMs: w.TimestampMs})
	}
	return t
}

// truncateToRemote checks the follower's log against the committed
// remote log's epochs wherever both hold batches
// (replication.RemoteDisagreement), as a follower's fetch is checked
// against its leader's (KIP-320): from the first offset the remote log
// holds in another epoch, the log is cut back. It reports whether it cut.
func (r *Replica) truncateToRemote(ctx context.Context, leader uint32, epoch int32) (bool, error) {
	end := r.log.EndOffset()
	if end == r.log.StartOffset() {
		return false, nil
	}
	rl := r.remote.log.Load()
	m, err := r.mgr.cfg.Remote.Manifest(ctx, HandleOf(rl))
	if err != nil {
		return false, err
	}
	release, err := r.lockFollowing(leader, epoch, end)
	if err != nil {
		return false, err
	}
	defer release()
	start := r.log.StartOffset()
	to, ok := replication.RemoteDisagreement(remoteSpans(m), logSpans(r.log), start, end)
	if !ok || to >= end {
		return false, nil
	}
	r.mgr.log.Info("truncating batches the remote log holds in another epoch", "bucket", r.id.String(), "to_offset", to,
		"start_offset", start, "end_offset", end)
	return r.cutLog(to), nil
}

// ReadRemoteBelow reads committed batches of the remote log from offset
// from on, about maxBytes, for a KV store that needs the changelog below
// the local log's start; nil when the remote log does not hold from.
func (r *Replica) ReadRemoteBelow(ctx context.Context, from int64, maxBytes int) ([]byte, error) {
	if r.remoteFenced() {
		return nil, r.errRemoteFenced()
	}
	if !r.inRemote(from) {
		return nil, nil
	}
	return r.readRemoteFrom(ctx, from, maxBytes)
}

// readRemoteFrom reads whole batches of the committed remote log from
// offset on (offset is a batch boundary of this replica's log: its end),
// dropping those before it.
func (r *Replica) readRemoteFrom(ctx context.Context, offset int64, maxBytes int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, remoteCatchUpTimeout)
	defer cancel()
	h := HandleOf(r.remote.log.Load())
	loc, err := r.mgr.cfg.Remote.Locate(ctx, h, offset)
	if err != nil {
		return nil, err
	}
	data, err := r.mgr.cfg.Remote.ReadBatchesFrom(ctx, loc, offset, maxBytes)
	if err != nil {
		return nil, err
	}
	if it := record.NewBatchIterator(data, false); it.Next() && it.Batch().BaseOffset() != offset {
		b := it.Batch()
		return nil, fmt.Errorf("remote batch [%d, %d] straddles this replica's end %d", b.BaseOffset(), b.LastOffset(), offset)
	}
	return data, nil
}
