package tablet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/fanout"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// DefaultTieringInterval is Config.TieringInterval's default.
const DefaultTieringInterval = time.Minute

const (
	// tieringConcurrency bounds the buckets whose rounds run at once: each
	// uploads whole segments, and the node's disk and uplink are shared.
	tieringConcurrency = 4
	// tieringRoundTimeout bounds one bucket's round; an upload cut short
	// is retried next round.
	tieringRoundTimeout = 10 * time.Minute
	// remoteCommitTimeout bounds one commit, retries included.
	remoteCommitTimeout = 30 * time.Second
)

// droppedQueue bounds the dropped tables and partitions waiting for the
// deletion of their remote objects: a table of MaxPartitions partitions
// dropped at once fits.
const droppedQueue = 16 << 10

// droppedTable is a dropped table or partition whose remote objects are to
// be deleted: the id its buckets are keyed by, and its name for the log.
type droppedTable struct {
	id   uint64
	name string
}

// tieringLoop runs a tiering round for every bucket this node leads each
// TieringInterval, and deletes the remote objects of tables and partitions
// dropped while this node held replicas of them, until ctx ends.
func (r *Role) tieringLoop(ctx context.Context, dropped <-chan droppedTable) {
	var rl *tiering.RemoteLog
	t := time.NewTicker(r.cfg.TieringInterval)
	defer t.Stop()
	var pendingDrops []droppedTable
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-dropped:
			pendingDrops = append(pendingDrops, d)
			continue
		case <-t.C:
		}
		if rl == nil {
			cluster := r.deps.ClusterID()
			if cluster == "" {
				continue
			}
			var err error
			if rl, err = tiering.NewRemoteLog(tiering.RemoteLogConfig{Store: r.cfg.Remote, Root: cluster,
				Commit: remoteCommitter{r}, Logger: r.log.With("component", "tiering")}); err != nil {
				r.log.Error("tiering disabled", "err", err)
				return
			}
			r.log.Info("tiering sealed log segments", "store", r.cfg.Remote.String(), "interval", r.cfg.TieringInterval)
		}
		pendingDrops = r.deleteDropped(ctx, rl, pendingDrops)
		r.tierOnce(ctx, rl)
	}
}

// deleteDropped deletes the remote objects (remote logs and KV snapshots)
// of dropped tables and partitions and returns those it could not (tried
// again next round).
func (r *Role) deleteDropped(ctx context.Context, rl *tiering.RemoteLog, drops []droppedTable) []droppedTable {
	var left []droppedTable
	for _, d := range drops {
		n, err := rl.DeleteTable(ctx, d.id)
		if err != nil {
			r.log.Warn("deleting the remote objects of a dropped table or partition; trying again next round",
				"id", d.id, "name", d.name, "err", err)
			left = append(left, d)
			continue
		}
		if n > 0 {
			r.log.Info("deleted the remote objects of a dropped table or partition", "id", d.id, "name", d.name, "objects", n)
		}
	}
	return left
}

// tierOnce runs one round for each bucket this node leads.
func (r *Role) tierOnce(ctx context.Context, rl *tiering.RemoteLog) {
	leaders := r.replicas.LeaderBuckets()
	defer r.snapshotDueBuckets(ctx, leaders)
	fanout.Each(leaders, tieringConcurrency, func(l replica.LeaderBucket) {
		rctx, cancel := context.WithTimeout(ctx, tieringRoundTimeout)
		defer cancel()
		round, err := rl.Tier(rctx, &l.LeaderBucket)
		r.deps.Metrics.TieringSegments.Add(float64(round.Uploaded))
		r.deps.Metrics.TieringBytes.Add(float64(round.UploadedBytes))
		if err != nil && ctx.Err() == nil {
			r.deps.Metrics.TieringRoundErrors.Inc()
		}
		if round.Changed {
			r.replicas.NoteRemoteLog(l.ID, replica.RemoteLogOf(round.Committed, l.LeaderEpoch))
		}
		var ce *logstore.CorruptError
		if errors.As(err, &ce) {
			// Never data to commit: damage on this leader's disk.
			if !r.replicas.NoteDamage(l.ID, ce) {
				r.log.Error("a sealed segment to upload is damaged, and this node holds the only in-sync copy: it stays local, unread past the damaged batch",
					"bucket", l.ID.String(), "offset", ce.Offset, "err", err)
			}
			return
		}
		if err != nil && ctx.Err() == nil {
			level := r.log.Warn
			if errors.Is(err, transport.ErrFenced) {
				level = r.log.Info // leadership moved meanwhile
			}
			level("tiering round failed; retried next round", "bucket", l.ID.String(), "uploaded", round.Uploaded, "err", err)
		}
	})
}

// remoteCommitter commits remote manifests through the metadata leader.
type remoteCommitter struct{ r *Role }

// CommitRemoteLog proposes the commit, retrying what may be retried with
// the same request id: a retry after an unknown outcome gets the first
// attempt's answer.
func (c remoteCommitter) CommitRemoteLog(ctx context.Context, b *tiering.LeaderBucket, expected int64, next tiering.Handle) (tiering.Handle, error) {
	return c.commit(ctx, b, &pb.CommitRemoteLog{TableId: b.TableID, Bucket: b.Bucket, LeaderId: c.r.cfg.NodeID,
		LeaderEpoch: b.LeaderEpoch, ExpectedVersion: expected, RemoteLog: replica.RemoteLogOf(next, b.LeaderEpoch)})
}

// CutRemoteLog proposes the cut of a fenced remote log, as CommitRemoteLog.
func (c remoteCommitter) CutRemoteLog(ctx context.Context, b *tiering.LeaderBucket, expected int64, next tiering.Handle, cutOffset int64) (tiering.Handle, error) {
	return c.commit(ctx, b, &pb.CommitRemoteLog{TableId: b.TableID, Bucket: b.Bucket, LeaderId: c.r.cfg.NodeID,
		LeaderEpoch: b.LeaderEpoch, ExpectedVersion: expected, RemoteLog: replica.RemoteLogOf(next, b.LeaderEpoch),
		FenceCut: true, CutOffset: cutOffset})
}

func (c remoteCommitter) commit(ctx context.Context, b *tiering.LeaderBucket, commit *pb.CommitRemoteLog) (tiering.Handle, error) {
	req := &pb.CommitRemoteLogRequest{
		RequestId: fmt.Appendf(nil, "remote/%d/%d/%s", b.TableID, b.Bucket, commit.RemoteLog.ManifestKey),
		Commit:    commit,
	}
	var resp *pb.CommitRemoteLogResponse
	err := c.r.commitWithRetry(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CommitRemoteLog(ctx, req)
		return err
	})
	if err != nil {
		return tiering.Handle{}, err
	}
	return replica.HandleOf(resp.GetBucket().GetRemoteLog()), nil
}

// commitWithRetry runs a commit against the metadata leader, again after
// a backoff while its error is retriable, for at most remoteCommitTimeout.
// The request must carry the same request id on every attempt, so that a
// retry after an unknown outcome gets the first attempt's answer.
func (r *Role) commitWithRetry(ctx context.Context, call func(context.Context, pb.DRPCMetaClient) error) error {
	ctx, cancel := context.WithTimeout(ctx, remoteCommitTimeout)
	defer cancel()
	bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: true}
	for {
		err := r.deps.Meta.Call(ctx, call)
		if err == nil || !transport.IsRetriable(err) || !bo.Wait(ctx) {
			return err
		}
	}
}
