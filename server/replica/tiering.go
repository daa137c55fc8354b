package replica

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// logConfig is the log configuration of a replica of info's table: the
// node's template, with the table's segment size (the node's own
// SegmentMaxBytes, when set, stands in for a table that does not set
// log.segment.bytes: tests roll small segments that way), its log.ttl
// and its local retention of remote segments.
func logConfig(tmpl logstore.Config, dir string, logger *slog.Logger, info *tableInfo) logstore.Config {
	cfg := tmpl
	cfg.Dir, cfg.Logger = dir, logger
	if info.segmentBytesSet || tmpl.SegmentMaxBytes == 0 {
		cfg.SegmentMaxBytes = info.props.LogSegmentBytes
	}
	if cfg.MaxBatchBytes > int(cfg.SegmentMaxBytes) {
		cfg.MaxBatchBytes = int(cfg.SegmentMaxBytes)
	}
	cfg.RetentionAge = info.props.LogTTL
	cfg.LocalRetentionSegments = info.props.LogLocalSegments
	cfg.LocalRetentionAge = info.props.LogLocalTTL
	return cfg
}

// noteRemoteLog records the bucket's committed remote log, when newer than
// the one known, and lets the log's retention use it.
func (r *Replica) noteRemoteLog(rl *pb.RemoteLog) {
	for {
		cur := r.remote.log.Load()
		if rl == nil || (cur != nil && cur.GetVersion() >= rl.GetVersion()) {
			return
		}
		if r.remote.log.CompareAndSwap(cur, rl) {
			break
		}
	}
	r.refreshRetention()
}

// RemoteLog is the bucket's committed remote log as last seen (nil: none).
func (r *Replica) RemoteLog() *pb.RemoteLog { return r.remote.log.Load() }

// refreshRetention sets the log's retention bounds from what the replica
// knows: local copies may go below the committed remote end, for a
// primary-key table only below what its store applied too (the applier
// reads the local log); the log's age limit deletes a log table's records
// from anywhere, a primary-key table's only below its newest committed KV
// snapshot (a replica without the changelog restores from it), and a
// lake-enabled table's only below what its lake holds (LakeHold).
func (r *Replica) refreshRetention() {
	pk := r.table().primaryKey
	applied := int64(0)
	if pk && r.kv != nil {
		if a, err := r.kv.AppliedOffset(); err == nil {
			applied = a
		}
	}
	rule := replication.LocalRetention(r.remoteView(), pk, applied, r.newestKVSnapshot().GetOffset())
	b := logstore.RetentionBounds{RemoteStart: rule.RemoteStart, RemoteEnd: rule.RemoteEnd,
		ExpireBelow: replication.LakeHold(rule.ExpireBelow, r.table().props.DataLake, r.remote.lakeOffset.Load())}
	if b != r.log.Bounds() {
		r.log.SetRetentionBounds(b)
	}
}

// remoteView is the bucket's committed remote log as the protocol core's
// rules take it.
func (r *Replica) remoteView() replication.RemoteView {
	h := HandleOf(r.remote.log.Load())
	return replication.RemoteView{Start: h.StartOffset, CoveredFrom: h.CoveredFrom(), End: h.EndOffset, Fenced: r.remoteFenced()}
}

// heldFrom is where this leader's readable copies start (HeldFrom): its
// log's start, or below it a remote log that reaches it and that this node
// can read.
func (r *Replica) heldFrom() int64 {
	if r.mgr.cfg.Remote == nil {
		return r.log.StartOffset()
	}
	return replication.HeldFrom(r.log.StartOffset(), r.remoteView())
}

// LeaderBucket is a bucket this node leads as a tiering round and a KV
// snapshot round see it: tiering's own view of it (its log, epoch, high
// watermark, committed remote log, expiry and fence), and for a
// primary-key table what decides when its next snapshot is due.
type LeaderBucket struct {
	tiering.LeaderBucket
	ID         BucketID
	PrimaryKey bool
	// Primary-key tables: the committed KV snapshots (oldest first), the
	// store's applied offset and the table's kv.snapshot.* properties.
	KVSnapshots      []*pb.KVSnapshot
	AppliedOffset    int64
	SnapshotInterval time.Duration
	SnapshotRetained int
}

// divergence is the first offset the manifest holds that log holds in
// another leader epoch or not at all (below the log's start it is taken as
// agreeing: the manifest is the only copy left); ok is false when they
// agree. The rule is the protocol core's (replication.Divergence).
func divergence(log *logstore.Log, m *tiering.Manifest) (int64, bool) {
	return replication.Divergence(remoteSpans(m), logSpans(log), log.StartOffset())
}

// remoteSpans are the remote log's epochs.
func remoteSpans(m *tiering.Manifest) []replication.EpochSpan {
	var out []replication.EpochSpan
	m.EpochRanges(func(e int32, start, end int64) {
		out = append(out, replication.EpochSpan{Epoch: e, Start: start, End: end})
	})
	return out
}

// logSpans are a log's epochs over what it holds.
func logSpans(log *logstore.Log) []replication.EpochSpan {
	epochs := log.Epochs()
	starts := make([]replication.EpochSpan, len(epochs))
	for i, e := range epochs {
		starts[i] = replication.EpochSpan{Epoch: e.Epoch, Start: e.StartOffset}
	}
	return replication.Spans(starts, log.EndOffset())
}

// LeaderBuckets lists the buckets this node leads, and on the way refreshes
// every replica's retention bounds (a primary-key store's applied offset
// moves without telling).
func (m *Manager) LeaderBuckets() []LeaderBucket {
	m.mu.Lock()
	reps := make([]*Replica, 0, len(m.replicas))
	for _, r := range m.replicas {
		reps = append(reps, r)
	}
	m.mu.Unlock()
	var out []LeaderBucket
	for _, r := range reps {
		role, _, epoch, hw := r.state()
		if role == replication.RoleNone {
			continue
		}
		r.refreshRetention()
		if role != replication.RoleLeader {
			continue
		}
		info, log := r.table(), r.log
		l := LeaderBucket{ID: r.id, PrimaryKey: info.primaryKey,
			SnapshotInterval: info.props.KVSnapshotInterval, SnapshotRetained: info.props.KVSnapshotRetained}
		if r.kv != nil {
			l.KVSnapshots = r.kvSnapshots()
			l.AppliedOffset, _ = r.kv.AppliedOffset()
		}
		l.LeaderBucket = tiering.LeaderBucket{TableID: r.id.TableID, Bucket: r.id.Bucket, Log: log, LeaderEpoch: epoch,
			HighWatermark: hw, Committed: HandleOf(r.remote.log.Load()), TTL: info.props.LogTTL,
			ExpireBelow: replication.LakeHold(replication.AgeExpiryBelow(info.primaryKey, r.newestKVSnapshot().GetOffset()),
				info.props.DataLake, r.remote.lakeOffset.Load()),
			Fenced:     r.remoteFenced(),
			Divergence: func(m *tiering.Manifest) (int64, bool) { return divergence(log, m) }}
		out = append(out, l)
	}
	return out
}

// NoteRemoteLog records a remote log this node's leader just committed,
// before the metadata stream brings it.
func (m *Manager) NoteRemoteLog(id BucketID, rl *pb.RemoteLog) {
	if r := m.replica(id); r != nil {
		r.noteRemoteLog(rl)
	}
}

// remoteFenced says an unclean election fenced the bucket's remote log and
// KV snapshots and their cut is not committed yet (remote storage 6): no
// read, restore or retention may rely on them meanwhile.
func (r *Replica) remoteFenced() bool { return r.remote.fence.Load() != 0 }

// errRemoteFenced refuses, retriably, what would read the fenced copies.
func (r *Replica) errRemoteFenced() error {
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
		"bucket %s: the remote log and KV snapshots await their cut after the unclean election of leader epoch %d",
		r.id, r.remote.fence.Load())
}

// inRemote says whether offset is in the bucket's committed remote log and
// this node can read it.
func (r *Replica) inRemote(offset int64) bool {
	rl := r.remote.log.Load()
	return r.mgr.cfg.Remote != nil && rl != nil && offset >= rl.StartOffset && offset < rl.EndOffset
}

// serveRemote answers a consumer's read below the local log start from
// the remote log: a reference to the remote segment for a client that
// reads object storage itself (when the store presigns), else the batches,
// read here.
func (r *Replica) serveRemote(ctx context.Context, fb *pb.FetchBucket, budget int, out *pb.FetchedBucket) error {
	h := HandleOf(r.remote.log.Load())
	loc, err := r.mgr.cfg.Remote.Locate(ctx, h, fb.Offset)
	if err != nil {
		return r.remoteError(fb.Offset, err)
	}
	if fb.RemoteRefs {
		url, err := r.mgr.cfg.Remote.Presign(ctx, loc)
		switch {
		case err == nil:
			out.Remote = &pb.RemoteSegmentRef{Url: url, Position: loc.Position, Bytes: loc.Segment.Bytes,
				BaseOffset: loc.Segment.BaseOffset, NextOffset: loc.Segment.NextOffset}
			return nil
		case !errors.Is(err, tiering.ErrNoPresign):
			r.mgr.log.Warn("presigning a remote segment failed; reading it here", "bucket", r.id.String(), "err", err)
		}
	}
	data, err := r.mgr.cfg.Remote.ReadBatchesFrom(ctx, loc, fb.Offset, budget)
	if err != nil {
		return r.remoteError(fb.Offset, err)
	}
	if len(fb.Columns) > 0 {
		if data, _, _, err = r.projector(fb.Columns).appendProjected(nil, data, budget); err != nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "bucket %s: remote log at offset %d: %v", r.id, fb.Offset, err)
		}
	}
	out.Records = data
	return nil
}

// remoteError maps a failed remote read to the wire: an offset the remote
// log no longer holds (retention moved on) is out of range, damage is
// corrupt, the rest is a retriable unavailability.
func (r *Replica) remoteError(offset int64, err error) error {
	switch {
	case errors.Is(err, tiering.ErrNotRemote), errors.Is(err, tiering.ErrNotFound):
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "bucket %s: offset %d: %v", r.id, offset, err)
	case errors.Is(err, record.ErrCorruptBatch), errors.Is(err, tiering.ErrBadManifest), errors.Is(err, logstore.ErrCorrupt):
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_CORRUPT, "bucket %s: remote log at offset %d: %v", r.id, offset, err)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "bucket %s: reading the remote log at offset %d: %v", r.id, offset, err)
}

// HandleOf converts the metadata's remote log to tiering's handle.
func HandleOf(rl *pb.RemoteLog) tiering.Handle {
	if rl == nil {
		return tiering.Handle{}
	}
	return tiering.Handle{ManifestKey: rl.ManifestKey, StartOffset: rl.StartOffset, EndOffset: rl.EndOffset, RunStart: rl.RunStartOffset,
		Version: rl.Version, Segments: rl.Segments, Bytes: rl.Bytes, MaxTimestamp: rl.MaxTimestamp}
}

// RemoteLogOf is the metadata's record of a committed handle, committed by
// the leader of leaderEpoch (HandleOf's inverse).
func RemoteLogOf(h tiering.Handle, leaderEpoch int32) *pb.RemoteLog {
	return &pb.RemoteLog{ManifestKey: h.ManifestKey, StartOffset: h.StartOffset, EndOffset: h.EndOffset, RunStartOffset: h.RunStart,
		Version: h.Version, LeaderEpoch: leaderEpoch, Segments: h.Segments, Bytes: h.Bytes, MaxTimestamp: h.MaxTimestamp}
}

// remoteBefore returns the committed remote log when it holds offsets
// before localStart that this node can read, else nil.
func (r *Replica) remoteBefore(localStart int64) *pb.RemoteLog {
	rl := r.remote.log.Load()
	if r.mgr.cfg.Remote == nil || rl == nil || rl.Segments == 0 || rl.StartOffset >= localStart {
		return nil
	}
	return rl
}
