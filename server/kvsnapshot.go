package server

import (
	"context"
	"fmt"
	"time"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvSnapshotTimeout bounds one snapshot: reading the store, uploading its
// changed parts, committing.
const kvSnapshotTimeout = 30 * time.Minute

// snapshotBucket takes a KV snapshot of a primary-key bucket this node
// leads, commits it through the controller and deletes what only the
// snapshots it dropped referenced. Snapshots of the node run one at a time.
func (s *Server) snapshotBucket(ctx context.Context, id replica.BucketID) (*pb.SnapshotKVResponse, error) {
	if s.cfg.Remote == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"node %d has no remote storage for KV snapshots (floe serve --remote-dir or --s3-*)", s.cfg.NodeID)
	}
	root := s.ClusterID()
	if root == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know its cluster yet", s.cfg.NodeID)
	}
	ctx, cancel := context.WithTimeout(ctx, kvSnapshotTimeout)
	defer cancel()
	select {
	case s.snapshotSem <- struct{}{}:
		defer func() { <-s.snapshotSem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	taken, err := s.replicas.TakeKVSnapshot(ctx, id, s.cfg.Remote, root)
	if err != nil {
		return nil, err
	}
	m := taken.Manifest
	snap := &pb.KVSnapshot{ManifestKey: taken.ManifestKey, Offset: m.Offset, CreatedMs: m.CreatedMs, Rows: m.Rows, Bytes: m.Bytes}
	b, err := s.commitKVSnapshot(ctx, &pb.CommitKVSnapshot{TableId: id.TableID, Bucket: id.Bucket, LeaderId: s.cfg.NodeID,
		LeaderEpoch: taken.LeaderEpoch, Snapshot: snap, Retained: int32(taken.Retained)})
	if err != nil {
		// The parts and manifest stay until the next commit's collection.
		return nil, fmt.Errorf("server: commit KV snapshot of bucket %s: %w", id, err)
	}
	s.replicas.NoteKVSnapshots(id, b.GetKvSnapshots())
	var retained []string
	for _, k := range b.GetKvSnapshots() {
		retained = append(retained, k.ManifestKey)
	}
	cfg := tiering.KVSnapshotConfig{Store: s.cfg.Remote, Root: root, TableID: id.TableID, Bucket: id.Bucket}
	if n, err := tiering.CollectKVSnapshots(ctx, cfg, retained); err != nil {
		s.log.Warn("deleting objects of dropped KV snapshots (collected after the next snapshot)", "bucket", id.String(), "err", err)
	} else if n > 0 {
		s.log.Debug("deleted objects of dropped KV snapshots", "bucket", id.String(), "objects", n)
	}
	s.log.Info("KV snapshot committed", "bucket", id.String(), "offset", m.Offset, "rows", m.Rows, "parts", len(m.Parts),
		"reused_parts", taken.ReusedParts, "uploaded_bytes", taken.UploadedBytes)
	return &pb.SnapshotKVResponse{Snapshot: snap, UploadedBytes: taken.UploadedBytes, Parts: int32(len(m.Parts)),
		ReusedParts: int32(taken.ReusedParts)}, nil
}

// commitKVSnapshot proposes the commit, retrying what may be retried with
// the same request id.
func (s *Server) commitKVSnapshot(ctx context.Context, c *pb.CommitKVSnapshot) (*pb.BucketRecord, error) {
	req := &pb.CommitKVSnapshotRequest{Commit: c,
		RequestId: fmt.Appendf(nil, "kvsnap/%d/%d/%s", c.TableId, c.Bucket, c.Snapshot.ManifestKey)}
	var resp *pb.CommitKVSnapshotResponse
	err := s.commitWithRetry(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CommitKVSnapshot(ctx, req)
		return err
	})
	return resp.GetBucket(), err
}

// snapshotDue says whether a primary-key bucket this node leads needs a
// periodic KV snapshot: its newest is kv.snapshot.interval old (or it has
// none) and its store applied something since.
func snapshotDue(l replica.LeaderLog, now time.Time) bool {
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
func (s *Server) snapshotDueBuckets(ctx context.Context, leaders []replica.LeaderLog) {
	now := time.Now()
	for _, l := range leaders {
		if ctx.Err() != nil || !snapshotDue(l, now) {
			continue
		}
		if _, err := s.snapshotBucket(ctx, l.ID); err != nil && ctx.Err() == nil {
			s.log.Warn("periodic KV snapshot failed; tried again next round", "bucket", l.ID.String(), "err", err)
		}
	}
}
