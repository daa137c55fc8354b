package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/storage/logstore"
)

// BucketID names a bucket.
type BucketID struct {
	TableID uint64
	Bucket  int32
}

func (b BucketID) String() string { return fmt.Sprintf("%d/%d", b.TableID, b.Bucket) }

type role int

const (
	roleNone role = iota // offline or not yet told
	roleLeader
	roleFollower
)

// followerState is what a leader knows of one follower in its epoch.
type followerState struct {
	leo        int64 // -1 until it fetched in this epoch
	caughtUpAt time.Time
}

// Replica is this node's replica of one bucket.
type Replica struct {
	id   BucketID
	dir  string
	log  *logstore.Log
	mgr  *Manager
	info *tableInfo
	kv   KV // primary-key tables only

	// produceMu orders the idempotence check with the append it decides,
	// and the follower path's truncations and appends.
	produceMu sync.Mutex
	writers   *writerTable

	mu          sync.Mutex
	role        role
	leaderID    uint32
	leaderEpoch int32
	bucketEpoch int32
	replicas    []uint32
	isr         []uint32 // committed
	pendingISR  []uint32 // proposed and not yet answered; nil when none
	hw          int64
	hwSaved     int64
	followers   map[uint32]*followerState
	hwWaiters   []hwWaiter // writes waiting for the high watermark (leader)
	closed      bool
}

const hwFile = "high-watermark"

// openReplica opens (or creates) the replica's log and rebuilds its writer
// state from the log's tail.
func openReplica(m *Manager, id BucketID, info *tableInfo) (*Replica, error) {
	dir := filepath.Join(m.cfg.Dir, fmt.Sprintf("t%d-b%d", id.TableID, id.Bucket))
	cfg := m.cfg.Log
	cfg.Dir = dir
	cfg.Logger = m.log.With("bucket", id.String())
	l, err := logstore.Open(cfg)
	if err != nil {
		return nil, err
	}
	r := &Replica{id: id, dir: dir, log: l, mgr: m, info: info, writers: newWriterTable(), hw: -1}
	r.hw = min(readHW(dir), l.EndOffset())
	r.hwSaved = r.hw
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

// openWriters loads the writer state.
func (r *Replica) openWriters() error {
	dir, l := r.dir, r.log
	// Writer state: the snapshot plus the log after it, when the snapshot
	// is not past the log's end (a truncation since); else a rescan.
	if t, offset, err := loadWriters(dir); err == nil && offset <= l.EndOffset() && offset >= l.StartOffset() {
		r.writers = t
		return r.replayWriters(offset)
	}
	return r.rebuildWriters()
}

// rebuildWriters replays the writer ids and sequences of the last segments
// so retries of batches appended before a restart are still recognized:
// the fallback when no usable writer-state snapshot exists.
func (r *Replica) rebuildWriters() error {
	r.writers = newWriterTable()
	segs := r.log.Segments()
	return r.replayWriters(segs[max(0, len(segs)-2)].BaseOffset)
}

// saveWriters snapshots the writer table at the current log end.
func (r *Replica) saveWriters() {
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return
	}
	if err := r.saveWritersLocked(); err != nil {
		r.mgr.log.Warn("writer-state snapshot", "bucket", r.id.String(), "err", err)
	}
}

func readHW(dir string) int64 {
	buf, err := os.ReadFile(filepath.Join(dir, hwFile))
	if err != nil || len(buf) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(buf))
}

// saveHW checkpoints the high watermark if it moved (not fsynced: a lost
// checkpoint only lowers the watermark after a crash, which is safe).
func (r *Replica) saveHW() {
	r.mu.Lock()
	hw := r.hw
	if hw == r.hwSaved || r.closed {
		r.mu.Unlock()
		return
	}
	r.hwSaved = hw
	r.mu.Unlock()
	buf := binary.BigEndian.AppendUint64(nil, uint64(hw))
	tmp := filepath.Join(r.dir, hwFile+".tmp")
	if err := os.WriteFile(tmp, buf, 0o644); err == nil {
		_ = os.Rename(tmp, filepath.Join(r.dir, hwFile))
	}
}

// close stops the replica and closes its log; with remove, deletes its files.
func (r *Replica) close(remove bool) error {
	r.saveHW()
	if !remove {
		r.saveWriters()
	}
	r.mu.Lock()
	r.closed = true
	r.role = roleNone
	r.wakeAllHWWaitersLocked()
	r.mu.Unlock()
	r.mgr.notify()
	var err error
	if r.kv != nil {
		err = r.kv.Close()
	}
	r.produceMu.Lock()
	err = errors.Join(err, r.log.Close())
	r.produceMu.Unlock()
	if remove {
		err = errors.Join(err, os.RemoveAll(r.dir))
	}
	return err
}

// becomeLeader makes the replica the leader at epoch. A replica already
// leading at that epoch only takes the new ISR.
func (r *Replica) becomeLeader(epoch, bucketEpoch int32, replicas, isr []uint32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.replicas = slices.Clone(replicas)
	if bucketEpoch >= r.bucketEpoch {
		r.bucketEpoch = bucketEpoch
		r.isr = slices.Clone(isr)
		r.pendingISR = nil
	}
	if r.role == roleLeader && r.leaderEpoch == epoch {
		r.maybeAdvanceHWLocked()
		return nil
	}
	if err := r.log.AssignEpoch(epoch); err != nil && !errors.Is(err, logstore.ErrStaleEpoch) {
		return err
	}
	r.role, r.leaderID, r.leaderEpoch = roleLeader, r.mgr.cfg.NodeID, epoch
	if r.kv != nil {
		// The rows a leader writes are the ones its next upserts of those
		// keys merge against and lookups, which come to it, ask for.
		r.kv.SetLeading(true)
	}
	r.wakeAllHWWaitersLocked()
	r.hw = min(r.hw, r.log.EndOffset())
	now := time.Now()
	r.followers = map[uint32]*followerState{}
	for _, id := range replicas {
		if id != r.mgr.cfg.NodeID {
			r.followers[id] = &followerState{leo: -1, caughtUpAt: now}
		}
	}
	r.mgr.log.Info("leading bucket", "bucket", r.id.String(), "leader_epoch", epoch, "isr", isr, "end_offset", r.log.EndOffset(), "high_watermark", r.hw)
	r.maybeAdvanceHWLocked()
	r.mgr.notify()
	return nil
}

// becomeFollower makes the replica a follower of leader at epoch (leader 0:
// the bucket is offline).
func (r *Replica) becomeFollower(leader uint32, epoch, bucketEpoch int32, replicas, isr []uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.replicas = slices.Clone(replicas)
	if bucketEpoch >= r.bucketEpoch {
		r.bucketEpoch = bucketEpoch
		r.isr = slices.Clone(isr)
	}
	if r.role == roleFollower && r.leaderEpoch == epoch && r.leaderID == leader {
		return
	}
	was := r.role
	r.role, r.leaderID, r.leaderEpoch = roleFollower, leader, epoch
	r.wakeAllHWWaitersLocked()
	if leader == 0 {
		r.role = roleNone
	}
	r.followers, r.pendingISR = nil, nil
	if r.kv != nil {
		r.kv.SetLeading(false)
	}
	if was == roleLeader {
		r.mgr.log.Info("stopped leading bucket", "bucket", r.id.String(), "new_leader", leader, "leader_epoch", epoch)
	}
	r.mgr.notify()
}

// isrForHWLocked is the ISR the high watermark waits for: the larger of the
// committed ISR and a proposed one.
func (r *Replica) isrForHWLocked() []uint32 {
	out := slices.Clone(r.isr)
	for _, id := range r.pendingISR {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// maybeAdvanceHWLocked moves the leader's high watermark to the smallest
// durable end offset over the ISR, if that is higher.
func (r *Replica) maybeAdvanceHWLocked() {
	if r.role != roleLeader {
		return
	}
	hw := r.log.EndOffset()
	for _, id := range r.isrForHWLocked() {
		if id == r.mgr.cfg.NodeID {
			continue
		}
		f := r.followers[id]
		if f == nil || f.leo < 0 {
			return // a follower has not fetched in this epoch yet
		}
		hw = min(hw, f.leo)
	}
	if hw > r.hw {
		r.hw = hw
		r.wakeHWWaitersLocked()
		r.mgr.notify()
		if r.kv != nil {
			r.kv.HWMoved()
		}
	}
}

// snapshot returns the replica's role fields.
func (r *Replica) state() (role, uint32, int32, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role, r.leaderID, r.leaderEpoch, r.hw
}
