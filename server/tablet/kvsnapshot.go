package tablet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvSnapshotTimeout bounds one snapshot: reading the store, uploading its
// changed parts, committing.
const kvSnapshotTimeout = 30 * time.Minute

// snapshotBucket takes a KV snapshot of a primary-key bucket this node
// leads, on the snapshot list the metadata holds when it starts, commits
// it through the controller naming that list's version, then collects what
// no snapshot committed by then references. Snapshots of the node run one
// at a time, so its collection never runs during an upload of its own.
func (r *Role) snapshotBucket(ctx context.Context, id replica.BucketID) (*pb.SnapshotKVResponse, error) {
	start := time.Now()
	resp, err := r.takeKVSnapshot(ctx, id)
	if err != nil {
		r.deps.Metrics.KVSnapshotErrors.Inc()
		return nil, err
	}
	r.deps.Metrics.KVSnapshots.Inc()
	r.deps.Metrics.KVSnapshotBytes.Add(float64(resp.UploadedBytes))
	r.deps.Metrics.KVSnapshotDurations.Observe(time.Since(start).Seconds())
	return resp, nil
}

// takeKVSnapshot is snapshotBucket's work.
func (r *Role) takeKVSnapshot(ctx context.Context, id replica.BucketID) (*pb.SnapshotKVResponse, error) {
	if r.cfg.Remote == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"node %d has no remote storage for KV snapshots (floe serve --remote-dir or --s3-*)", r.cfg.NodeID)
	}
	root := r.deps.ClusterID()
	if root == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know its cluster yet", r.cfg.NodeID)
	}
	ctx, cancel := context.WithTimeout(ctx, kvSnapshotTimeout)
	defer cancel()
	select {
	case r.snapshotSem <- struct{}{}:
		defer func() { <-r.snapshotSem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	lead, err := r.replicas.KVLeader(id)
	if err != nil {
		return nil, err
	}
	read := func(ctx context.Context) (*pb.BucketRecord, error) {
		return r.committedBucket(ctx, id, lead.Database, lead.Table, lead.Partition)
	}
	base, err := read(ctx)
	if err != nil {
		return nil, pkgerr.Errorf("server", "read the committed KV snapshots of bucket %s: %w", id, err)
	}
	if err := leadsAt(base, r.cfg.NodeID, lead.LeaderEpoch); err != nil {
		return nil, err
	}
	taken, err := r.replicas.TakeKVSnapshot(ctx, id, r.cfg.Remote, root, lead.LeaderEpoch, base.GetKvSnapshots())
	if err != nil {
		return nil, err
	}
	m := taken.Manifest
	snap := &pb.KVSnapshot{ManifestKey: taken.ManifestKey, Offset: m.Offset, CreatedMs: m.CreatedMs, Rows: m.Rows, Bytes: m.Bytes}
	b, err := r.commitKVSnapshot(ctx, &pb.CommitKVSnapshot{TableId: id.TableID, Bucket: id.Bucket, LeaderId: r.cfg.NodeID,
		LeaderEpoch: lead.LeaderEpoch, Snapshot: snap, Retained: int32(lead.Retained),
		ExpectedVersion: proto.Int64(metastate.KVSnapshotsVersion(base.GetKvSnapshots()))})
	if err != nil {
		// The parts and manifest stay until a collection after a commit.
		return nil, pkgerr.Errorf("server", "commit KV snapshot of bucket %s: %w", id, err)
	}
	r.replicas.NoteKVSnapshots(id, b.GetKvSnapshots())
	cfg := tiering.KVSnapshotConfig{Store: r.cfg.Remote, Root: root, TableID: id.TableID, Bucket: id.Bucket}
	n, err := collectKVSnapshots(ctx, cfg, r.cfg.NodeID, lead.LeaderEpoch, read)
	switch {
	case errors.Is(err, errDeposed):
		r.log.Info("not deleting objects of dropped KV snapshots: the bucket has a newer leader, which will", "bucket", id.String(), "err", err)
	case err != nil:
		r.log.Warn("deleting objects of dropped KV snapshots (collected after the next snapshot)", "bucket", id.String(), "err", err)
	case n > 0:
		r.log.Debug("deleted objects of dropped KV snapshots", "bucket", id.String(), "objects", n)
	}
	r.log.Info("KV snapshot committed", "bucket", id.String(), "offset", m.Offset, "rows", m.Rows, "parts", len(m.Parts),
		"reused_parts", taken.ReusedParts, "uploaded_bytes", taken.UploadedBytes)
	return &pb.SnapshotKVResponse{Snapshot: snap, UploadedBytes: taken.UploadedBytes, Parts: int32(len(m.Parts)),
		ReusedParts: int32(taken.ReusedParts)}, nil
}

// errDeposed: a KV snapshot collection found that the node no longer leads
// the bucket at the epoch it committed in, and deleted nothing.
var errDeposed = pkgerr.New("server", "deposed before collecting KV snapshots")

// collectKVSnapshots deletes the bucket's KV snapshot objects that no
// snapshot committed when it runs references (read gives the bucket's
// record then, at least as new as the caller's commit), only while that
// record still names node the leader at leaderEpoch, the epoch the caller
// committed in: errDeposed (and NOT_LEADER) otherwise, and nothing is
// deleted, since a newer leader's snapshots may be stored and not
// committed yet. Objects a newer leader writes after the check name its
// epoch, which tiering.CollectKVSnapshots leaves alone.
func collectKVSnapshots(ctx context.Context, cfg tiering.KVSnapshotConfig, node uint32, leaderEpoch int32,
	read func(context.Context) (*pb.BucketRecord, error)) (int, error) {
	b, err := read(ctx)
	if err != nil {
		return 0, err
	}
	if err := leadsAt(b, node, leaderEpoch); err != nil {
		return 0, fmt.Errorf("%w: %w", errDeposed, err)
	}
	retained := make([]string, 0, len(b.GetKvSnapshots()))
	for _, k := range b.GetKvSnapshots() {
		retained = append(retained, k.GetManifestKey())
	}
	return tiering.CollectKVSnapshots(ctx, cfg, leaderEpoch, retained)
}

// leadsAt is NOT_LEADER unless the committed record b names node the
// bucket's leader at leaderEpoch.
func leadsAt(b *pb.BucketRecord, node uint32, leaderEpoch int32) error {
	if b.GetLeader() != node || b.GetLeaderEpoch() != leaderEpoch {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"node %d led bucket %d/%d at leader epoch %d; the metadata names node %d at leader epoch %d",
			node, b.GetTableId(), b.GetBucket(), leaderEpoch, b.GetLeader(), b.GetLeaderEpoch())
	}
	return nil
}

// committedBucket reads the bucket's record as the metadata holds it now
// (GetTable reads on the metadata leader, linearizably), of the table or,
// when partition is set, of the table's partition. UNKNOWN_TABLE (or
// UNKNOWN_PARTITION) when it was dropped, even if another now has its
// name.
func (r *Role) committedBucket(ctx context.Context, id replica.BucketID, database, table, partition string) (*pb.BucketRecord, error) {
	resp, err := r.getTable(ctx, database, table, partition)
	if err != nil {
		return nil, err
	}
	name := database + "." + table
	got := resp.GetTable().GetId()
	if partition != "" {
		name += "/" + partition
		got = resp.GetPartition().GetId()
	}
	if got != id.TableID {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "%s is %d now, not %d", name, got, id.TableID)
	}
	for _, b := range resp.GetBuckets() {
		if b.GetBucket() == id.Bucket {
			return b, nil
		}
	}
	return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "%s has no bucket %d", name, id.Bucket)
}

// commitKVSnapshot proposes the commit, retrying what may be retried with
// the same request id.
func (r *Role) commitKVSnapshot(ctx context.Context, c *pb.CommitKVSnapshot) (*pb.BucketRecord, error) {
	req := &pb.CommitKVSnapshotRequest{Commit: c,
		RequestId: fmt.Appendf(nil, "kvsnap/%d/%d/%s", c.TableId, c.Bucket, c.Snapshot.ManifestKey)}
	var resp *pb.CommitKVSnapshotResponse
	err := r.commitWithRetry(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CommitKVSnapshot(ctx, req)
		return err
	})
	return resp.GetBucket(), err
}

// snapshotDue says whether a primary-key bucket this node leads needs a
// periodic KV snapshot: its newest is kv.snapshot.interval old (or it has
// none) and its store applied something since.
func snapshotDue(l replica.LeaderBucket, now time.Time) bool {
	if !l.PrimaryKey || l.SnapshotInterval <= 0 || l.AppliedOffset == 0 {
		return false
	}
	if len(l.KVSnapshots) == 0 {
		return true
	}
	newest := l.KVSnapshots[len(l.KVSnapshots)-1]
	return l.AppliedOffset > newest.Offset && now.Sub(time.UnixMilli(newest.CreatedMs)) >= l.SnapshotInterval
}

// snapshotDueBuckets takes the periodic KV snapshots of the buckets in
// leaders that need one, one at a time.
func (r *Role) snapshotDueBuckets(ctx context.Context, leaders []replica.LeaderBucket) {
	now := time.Now()
	for _, l := range leaders {
		if ctx.Err() != nil || !snapshotDue(l, now) {
			continue
		}
		if _, err := r.snapshotBucket(ctx, l.ID); err != nil && ctx.Err() == nil {
			r.log.Warn("periodic KV snapshot failed; tried again next round", "bucket", l.ID.String(), "err", err)
		}
	}
}
