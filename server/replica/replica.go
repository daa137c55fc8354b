package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
)

// BucketID names a bucket.
type BucketID struct {
	TableID uint64
	Bucket  int32
}

func (b BucketID) String() string { return fmt.Sprintf("%d/%d", b.TableID, b.Bucket) }

// Replica is this node's replica of one bucket: its log, and the protocol
// core (package replication) that decides its role, high watermark and ISR.
// The replica performs what the core decides. Its fields are grouped by
// what guards them; doc.go gives the order its locks are taken in.
type Replica struct {
	// Set at open, never changed.
	id  BucketID
	dir string
	mgr *Manager
	kv  KV // primary-key tables only
	// log is safe for concurrent use; what changes its content (appends,
	// truncations, a reset) runs under produceMu.
	log *logstore.Log

	// Read without a lock, each replaced whole.
	info atomic.Pointer[tableInfo] // replaced when the table's metadata changes
	// remote is what the metadata last said of the bucket's remote copies.
	remote remoteCopies
	// uncleanElections is the bucket's count of unclean elections, as last
	// seen: after one, a leader may lack committed records by choice.
	uncleanElections atomic.Int32
	// hwSeen is the core's high watermark as of the last effects
	// performed: fetch sessions compare it with what they told a follower
	// (a stale value only delays telling it until the session's refresh).
	hwSeen atomic.Int64
	// proposing: the core has an ISR proposal pending, as of the last
	// effects performed (housekeeping resends those on every tick).
	proposing atomic.Bool

	// turns orders client writes before produceMu (turns.go); it has its
	// own lock, never held while taking another.
	turns turnGate

	// produceMu orders the idempotence check with the append it decides,
	// and the follower path's truncations and appends: every change to the
	// log's content.
	produceMu sync.Mutex
	writers   writerState // under produceMu (writers.go)

	// mu guards the protocol core and the replica's life and work.
	mu        sync.Mutex
	core      *replication.Bucket
	closed    bool
	failed    error          // the log failed: out of service for good (failure.go)
	hwWaiters []hwWaiter     // writes waiting for the high watermark (leader)
	bgSync    backgroundSync // acks=0 writes made durable in the background (backgroundsync.go)
	catchUp   catchUp        // the follower's catch-up from remote storage (catchuptask.go)
	damage    damage         // damage found in the log and not yet cut away (damage.go)
	// learner: a move added this replica and it is not in the ISR yet; its
	// catch-up is throttled (throttle.go).
	learner atomic.Bool
}

// Dir is the folder of bucket id's replica under a node's tablet folder.
func Dir(tabletDir string, id BucketID) string {
	return filepath.Join(tabletDir, fmt.Sprintf("t%d-b%d", id.TableID, id.Bucket))
}

// openReplica opens (or creates) the replica's log and rebuilds its writer
// state from the log's tail.
func openReplica(m *Manager, id BucketID, info *tableInfo) (*Replica, error) {
	dir := Dir(m.cfg.Dir, id)
	l, err := logstore.Open(logConfig(m.cfg.Log, dir, m.log.With("bucket", id.String()), info))
	if err != nil {
		return nil, err
	}
	// What the log holds after a restart may not be on disk yet (the
	// process died, the machine did not): the replica counts as durable
	// only what it has synced itself.
	if err := l.Sync(); err != nil {
		l.Close()
		return nil, err
	}
	latest := int32(-1)
	if e, ok := l.LatestEpoch(); ok {
		latest = e
	}
	r := &Replica{id: id, dir: dir, log: l, mgr: m, writers: writerState{table: newWriterTable(), saved: -1}, damage: damage{at: -1, kept: -1}}
	r.info.Store(info)
	r.refreshRetention()
	r.core = replication.New(replication.Config{Self: m.cfg.NodeID, NodeEpoch: int64(m.NodeEpoch()),
		ReplicaLagMax: m.cfg.ReplicaLagMax, MinISR: info.minISR},
		replication.Log{HWCheckpoint: m.hw.get(id, dir), DurableEnd: l.EndOffset(), LatestEpoch: latest})
	if from, lost := l.LostTail(); lost {
		r.damage.at = from
		r.core.LostTail(from)
	}
	if err := r.openWriters(); err != nil {
		l.Close()
		return nil, err
	}
	if info.kv != nil {
		if r.kv, err = info.kv.Open(r); err != nil {
			l.Close()
			return nil, err
		}
	}
	return r, nil
}

// openWriters loads the writer state: the snapshot plus the log after it,
// when the log still holds the batch the snapshot ends at; else a rescan.
func (r *Replica) openWriters() error {
	if end := r.log.EndOffset(); end == r.log.StartOffset() {
		// An empty log has no writers to remember: no snapshot is
		// needed until it holds a batch (a new table's thousands of
		// buckets would otherwise each write one on the first round).
		r.writers.saved = end
		return nil
	}
	t, offset, anchor, err := loadWriters(r.dir)
	if err == nil && offset >= r.log.StartOffset() && offset <= r.log.EndOffset() {
		if a, err := r.anchorAt(offset); err == nil && a == anchor {
			r.writers.table = t
			if offset == r.log.EndOffset() {
				r.writers.saved = offset
			}
			return r.replayWriters(offset)
		}
		r.mgr.log.Info("writer-state snapshot does not match the log (truncated since): rebuilding it from the log",
			"bucket", r.id.String(), "snapshot_offset", offset)
	}
	return r.rebuildWriters()
}

// rebuildWriters replays the writer ids and sequences of the last segments
// so retries of batches appended before a restart are still recognized:
// the fallback when no usable writer-state snapshot exists.
func (r *Replica) rebuildWriters() error {
	r.writers.table = newWriterTable()
	segs := r.log.Segments()
	return r.replayWriters(segs[max(0, len(segs)-2)].BaseOffset)
}

// saveWriters snapshots the writer table at the current log end.
func (r *Replica) saveWriters() {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	r.mu.Lock()
	skip := r.closed || r.failed != nil
	r.mu.Unlock()
	if skip {
		return
	}
	if err := r.saveWritersLocked(); err != nil {
		r.mgr.log.Warn("writer-state snapshot", "bucket", r.id.String(), "err", err)
		r.maybeFail(err)
	}
}

// close stops the replica and closes its log; with remove, deletes its files.
func (r *Replica) close(remove bool) error {
	if !remove {
		r.saveWriters()
	}
	r.mu.Lock()
	r.closed = true
	r.wakeAllHWWaitersLocked()
	catchUpEnded := r.catchUp.stopLocked()
	r.mu.Unlock()
	if catchUpEnded != nil {
		<-catchUpEnded // it changes the store and the log: both close next
	}
	r.mgr.followGen.Add(1)
	r.mgr.notify()
	var err error
	if r.kv != nil {
		err = r.kv.Close(remove)
	}
	r.produceMu.Lock()
	err = errors.Join(err, r.log.Close())
	r.produceMu.Unlock()
	if remove {
		err = errors.Join(err, os.RemoveAll(r.dir))
	}
	return err
}

// state returns the replica's role, leader, leader epoch and high
// watermark; a closed or failed replica has no role.
func (r *Replica) state() (replication.Role, uint32, int32, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked()
}

func (r *Replica) stateLocked() (replication.Role, uint32, int32, int64) {
	role, leader, epoch := r.core.Role()
	if r.closed || r.failed != nil {
		role = replication.RoleNone
	}
	return role, leader, epoch, r.core.HW()
}

// table is what the replica knows of its table.
func (r *Replica) table() *tableInfo { return r.info.Load() }

// setTable applies a change of the table's metadata (ALTER TABLE) without
// a restart: a new min.insync.replicas holds from the next write, and
// writes waiting for their acks look again; log.ttl and the local
// retention reach the log, which applies them at once; the KV side takes
// the new schema versions. The snapshot interval and log.ttl's remote
// side are read from the table by every tiering round. log.segment.bytes
// applies from the replica's next open.
func (r *Replica) setTable(info *tableInfo) {
	r.info.Store(info)
	r.log.SetAgeRetention(logstore.AgeRetention{RetentionAge: info.props.LogTTL,
		LocalRetentionSegments: info.props.LogLocalSegments, LocalRetentionAge: info.props.LogLocalTTL})
	if r.kv != nil && info.kv != nil {
		r.kv.SetTable(info.kv)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.core.MinISR() != info.minISR {
		r.core.SetMinISR(info.minISR)
		r.wakeAllHWWaitersLocked()
	}
}
