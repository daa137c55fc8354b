package replica

import (
	"context"
	"fmt"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// noteKVSnapshots records the bucket's committed KV snapshots when they
// are at least as new as those known (the newest's offset never moves
// back), and lets retention use the newest.
func (r *Replica) noteKVSnapshots(snaps []*pb.KVSnapshot) {
	if len(snaps) == 0 {
		return
	}
	for {
		cur := r.kvSnaps.Load()
		if cur != nil && len(*cur) > 0 && newestOf(*cur).GetOffset() > newestOf(snaps).GetOffset() {
			return
		}
		next := append([]*pb.KVSnapshot(nil), snaps...)
		if r.kvSnaps.CompareAndSwap(cur, &next) {
			break
		}
	}
	r.refreshRetention()
}

// setKVSnapshots records the bucket's committed KV snapshots as the
// metadata stream has them, in commit order: a fence cut after an unclean
// election may have dropped the newest.
func (r *Replica) setKVSnapshots(snaps []*pb.KVSnapshot) {
	next := append([]*pb.KVSnapshot(nil), snaps...)
	r.kvSnaps.Store(&next)
	r.refreshRetention()
}

func newestOf(snaps []*pb.KVSnapshot) *pb.KVSnapshot {
	if len(snaps) == 0 {
		return nil
	}
	return snaps[len(snaps)-1]
}

// kvSnapshots returns the committed KV snapshots known, oldest first.
func (r *Replica) kvSnapshots() []*pb.KVSnapshot {
	if p := r.kvSnaps.Load(); p != nil {
		return *p
	}
	return nil
}

// newestKVSnapshot is the newest committed KV snapshot known (nil: none).
func (r *Replica) newestKVSnapshot() *pb.KVSnapshot { return newestOf(r.kvSnapshots()) }

// NewestKVSnapshot is the bucket's newest committed KV snapshot known
// (nil: none).
func (r *Replica) NewestKVSnapshot() *pb.KVSnapshot { return r.newestKVSnapshot() }

// RemoteStore is the object store the node's KV snapshots are in (nil:
// none).
func (r *Replica) RemoteStore() tiering.ObjectStore { return r.mgr.cfg.RemoteStore }

// TakenKVSnapshot is a KV snapshot a leader stored, for the server to
// commit.
type TakenKVSnapshot struct {
	tiering.KVSnapshotResult
	LeaderEpoch int32
	// Committed are the snapshots committed before it (their manifest
	// keys), and Retained the table's kv.snapshot.retained.
	Committed []string
	Retained  int
}

// TakeKVSnapshot stores a snapshot of a primary-key bucket this node leads
// in remote storage (under root in store), reusing the parts its committed
// snapshots stored, and returns it for the caller to commit.
func (m *Manager) TakeKVSnapshot(ctx context.Context, id BucketID, store tiering.ObjectStore, root string) (TakenKVSnapshot, error) {
	r := m.replica(id)
	if r == nil {
		return TakenKVSnapshot{}, m.missingReplica(id)
	}
	if r.kv == nil {
		return TakenKVSnapshot{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s has no primary key: only primary-key tables have KV snapshots", r.table().name)
	}
	role, leader, epoch, _ := r.state()
	if role != replication.RoleLeader {
		return TakenKVSnapshot{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"node %d does not lead bucket %s (leader: node %d)", m.cfg.NodeID, id, leader)
	}
	var committed []string
	for _, s := range r.kvSnapshots() {
		committed = append(committed, s.ManifestKey)
	}
	cfg := tiering.KVSnapshotConfig{Store: store, Root: root, TableID: id.TableID, Bucket: id.Bucket, TempDir: r.dir}
	res, err := r.kv.Snapshot(ctx, cfg, epoch, committed)
	if err != nil {
		return TakenKVSnapshot{}, fmt.Errorf("replica: KV snapshot of bucket %s: %w", id, err)
	}
	return TakenKVSnapshot{KVSnapshotResult: res, LeaderEpoch: epoch, Committed: committed,
		Retained: r.table().props.KVSnapshotRetained}, nil
}

// NoteKVSnapshots records the KV snapshots a commit of this node's leader
// returned, before the metadata stream brings them.
func (m *Manager) NoteKVSnapshots(id BucketID, snaps []*pb.KVSnapshot) {
	if r := m.replica(id); r != nil {
		r.noteKVSnapshots(snaps)
	}
}

// restoreFromSnapshot restores a primary-key follower far behind from
// the newest committed KV snapshot, when it is past the follower's end and
// the changelog after it is replayable, and starts its log over at the
// snapshot's offset, with produceMu held. ok is false when there is no
// such snapshot this node can read.
func (r *Replica) restoreFromSnapshot(ctx context.Context, replayable func(offset int64) bool) (bool, error) {
	snap := r.newestKVSnapshot()
	if r.kv == nil || r.mgr.cfg.RemoteStore == nil || snap == nil || snap.Offset <= r.log.EndOffset() || !replayable(snap.Offset) {
		return false, nil
	}
	r.mgr.log.Info("restoring a primary-key replica from its newest KV snapshot", "bucket", r.id.String(),
		"end_offset", r.log.EndOffset(), "snapshot_offset", snap.Offset, "manifest", snap.ManifestKey)
	offset, err := r.kv.Restore(ctx, r.mgr.cfg.RemoteStore, snap.ManifestKey)
	if err != nil {
		return false, err
	}
	if err := r.dropWriterSnapshot(); err != nil {
		return false, err
	}
	// The store now says it applied below offset, past the log's end:
	// the log starts over there (a crash before this leaves a store ahead
	// of its log, which opening empties, and the restore runs again).
	if err := r.log.Reset(offset); err != nil {
		r.maybeFail(err)
		return false, err
	}
	r.writers = r.remoteWriters(ctx, offset)
	return true, nil
}
