package replica

import (
	"context"
	"fmt"

	"github.com/floedb/floe/internal/pkgerr"
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
		cur := r.remote.kvSnapshots.Load()
		if cur != nil && len(*cur) > 0 && newestOf(*cur).GetOffset() > newestOf(snaps).GetOffset() {
			return
		}
		next := append([]*pb.KVSnapshot(nil), snaps...)
		if r.remote.kvSnapshots.CompareAndSwap(cur, &next) {
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
	r.remote.kvSnapshots.Store(&next)
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
	if p := r.remote.kvSnapshots.Load(); p != nil {
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

// KVLeader is a primary-key bucket this node leads, as its replica knows
// it: what the server needs to read the bucket's committed metadata and
// take a snapshot on it.
type KVLeader struct {
	// Database and Table name the bucket's table, and Partition its
	// partition ("dt=2026-12-03"; "" when the table is not partitioned).
	Database, Table, Partition string
	LeaderEpoch                int32
	// Retained is the table's kv.snapshot.retained.
	Retained int
}

// KVLeader says which leadership of a primary-key bucket this node holds:
// INVALID_REQUEST for a table without a primary key, NOT_LEADER when it
// does not lead the bucket.
func (m *Manager) KVLeader(id BucketID) (KVLeader, error) {
	_, lead, err := m.kvLeader(id)
	return lead, err
}

func (m *Manager) kvLeader(id BucketID) (*Replica, KVLeader, error) {
	r := m.replica(id)
	if r == nil {
		return nil, KVLeader{}, m.missingReplica(id)
	}
	info := r.table()
	if r.kv == nil {
		return nil, KVLeader{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s has no primary key: only primary-key tables have KV snapshots", info.name)
	}
	role, leader, epoch, _ := r.state()
	if role != replication.RoleLeader {
		return nil, KVLeader{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"node %d does not lead bucket %s (leader: node %d)", m.cfg.NodeID, id, leader)
	}
	return r, KVLeader{Database: info.database, Table: info.table, Partition: info.partition, LeaderEpoch: epoch, Retained: info.props.KVSnapshotRetained}, nil
}

// TakeKVSnapshot stores a snapshot of a primary-key bucket this node leads
// at leaderEpoch in remote storage (under root in store), reusing the
// parts of committed (the bucket's committed snapshots as the metadata
// lists them; the commit names that list's version), and returns it for
// the caller to commit. NOT_LEADER when the node no longer leads at
// leaderEpoch.
func (m *Manager) TakeKVSnapshot(ctx context.Context, id BucketID, store tiering.ObjectStore, root string,
	leaderEpoch int32, committed []*pb.KVSnapshot) (tiering.KVSnapshotResult, error) {
	r, lead, err := m.kvLeader(id)
	if err != nil {
		return tiering.KVSnapshotResult{}, err
	}
	if lead.LeaderEpoch != leaderEpoch {
		return tiering.KVSnapshotResult{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"node %d leads bucket %s at leader epoch %d, not %d", m.cfg.NodeID, id, lead.LeaderEpoch, leaderEpoch)
	}
	previous := make([]string, 0, len(committed))
	for _, s := range committed {
		previous = append(previous, s.GetManifestKey())
	}
	cfg := tiering.KVSnapshotConfig{Store: store, Root: root, TableID: id.TableID, Bucket: id.Bucket, TempDir: r.dir}
	res, err := r.kv.Snapshot(ctx, cfg, leaderEpoch, previous)
	if err != nil {
		return tiering.KVSnapshotResult{}, pkgerr.Errorf("replica", "KV snapshot of bucket %s: %w", id, err)
	}
	return res, nil
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
// snapshot's offset. ok is false when there is no such snapshot this node
// can read.
//
// The download runs without produceMu: the replica is marked as catching
// up (catchuptask.go), so the fetcher leaves it alone and it takes no
// writes; taking the lock once before it waits out a write decided before
// the mark. A restore whose replica changed meanwhile leaves a store ahead
// of the log, which is emptied again (KV.DropAbove) and rebuilt.
func (r *Replica) restoreFromSnapshot(ctx context.Context, leader uint32, epoch int32, leaderHW int64, replayable func(offset int64) bool) (bool, error) {
	snap := r.newestKVSnapshot()
	end := r.log.EndOffset()
	if r.kv == nil || r.mgr.cfg.RemoteStore == nil || snap == nil || snap.Offset <= end || !replayable(snap.Offset) {
		return false, nil
	}
	release, err := r.lockFollowing(leader, epoch, end)
	if err != nil {
		return false, err
	}
	release()
	r.mgr.log.Info("restoring a primary-key replica from its newest KV snapshot", "bucket", r.id.String(),
		"end_offset", end, "snapshot_offset", snap.Offset, "manifest", snap.ManifestKey)
	offset, err := r.kv.Restore(ctx, r.mgr.cfg.RemoteStore, snap.ManifestKey)
	if err != nil {
		return false, err // a restore cut short leaves a store that applied nothing
	}
	writers := r.remoteWriters(ctx, offset)
	release, err = r.lockFollowing(leader, epoch, end)
	if err != nil {
		r.dropRestored()
		return false, err
	}
	defer release()
	if applied, err := r.kv.AppliedOffset(); err != nil || applied != offset {
		// Something changed the store since (a truncation's DropAbove).
		r.kv.DropAbove(r.log.EndOffset())
		return false, fmt.Errorf("%w: the KV store applied up to %d after restoring to %d (%v)", errCatchUpOutdated, applied, offset, err)
	}
	// The store now says it applied below offset, past the log's end:
	// the log starts over there (a crash before this leaves a store ahead
	// of its log, which opening empties, and the restore runs again).
	if err := r.startOver(offset, writers); err != nil {
		return false, err
	}
	r.reportFetched(leader, epoch, leaderHW)
	return true, nil
}

// dropRestored empties a store restored past its log's end for a replica
// that changed meanwhile: it is rebuilt from the log.
func (r *Replica) dropRestored() {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	r.kv.DropAbove(r.log.EndOffset())
}
