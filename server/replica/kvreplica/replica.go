package kvreplica

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

// kvReplica is the KV side of a primary-key bucket replica (a replica.KV):
// its Badger store, the applier that keeps the store at the replica's high
// watermark, the leader's pre-write buffer, and the barriers of
// linearizable lookups.
type kvReplica struct {
	r      Log
	id     string // the bucket, for logs
	dir    string
	cfg    kvstore.Config
	t      *table
	tables *Tables
	log    *slog.Logger

	store atomic.Pointer[kvstore.Store]
	// applyMu serializes catch-up rounds and store resets.
	applyMu sync.Mutex
	// stuck is set while the store cannot catch up (the log no longer
	// holds the records it needs); lookups then fail.
	stuck atomic.Pointer[error]

	// bufMu guards buf, bufEpoch and bld. The write path holds the log
	// replica's write lock first.
	bufMu    sync.Mutex
	buf      *kvstore.Buffer
	bufEpoch int32 // the leader epoch the buffer was loaded in; -1: none
	// bld builds the changelog of each write, reusing its buffer.
	bld *record.BatchBuilder

	barriers barrierQueue

	kick chan struct{} // capacity 1: the high watermark moved
	stop chan struct{}
	wg   sync.WaitGroup
}

var _ replica.KV = (*kvReplica)(nil)

// openKV opens the replica's store and starts its applier.
func openKV(r Log, t *table) (*kvReplica, error) {
	tables := t.tables
	kv := &kvReplica{r: r, id: r.ID().String(), dir: filepath.Join(r.Dir(), "kv"), t: t, tables: tables, log: tables.log,
		buf: kvstore.NewBuffer(), bufEpoch: -1, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	kv.cfg = tables.cfg.Store
	kv.cfg.Dir = kv.dir
	kv.cfg.Logger = kv.log.With("bucket", kv.id, "component", "badger")
	st, err := kvstore.Open(kv.cfg)
	if err != nil {
		return nil, err
	}
	kv.store.Store(st)
	if applied, err := st.AppliedOffset(); err == nil && applied > r.EndOffset() {
		kv.log.Warn("KV store is ahead of the log: rebuilding it from the log", "bucket", kv.id,
			"applied_offset", applied, "end_offset", r.EndOffset())
		if err := kv.resetLocked(); err != nil {
			return nil, err
		}
	}
	kv.barriers.kv = kv
	tables.opened(kv)
	kv.wg.Go(kv.run)
	kv.wake()
	return kv, nil
}

// Close stops the applier and the barriers and closes the store.
func (kv *kvReplica) Close() error {
	kv.tables.closed(kv)
	close(kv.stop)
	kv.barriers.close()
	kv.wg.Wait()
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	return kv.store.Load().Close()
}

// HWMoved wakes the applier: the high watermark moved.
func (kv *kvReplica) HWMoved() { kv.wake() }

// SetLeading makes the store cache the rows it writes while the replica
// leads: they are the ones its next upserts of those keys merge against
// and lookups, which come to the leader, ask for.
func (kv *kvReplica) SetLeading(leading bool) {
	kv.store.Load().CacheWrites(leading)
}

// wake tells the applier the high watermark may have moved.
func (kv *kvReplica) wake() {
	select {
	case kv.kick <- struct{}{}:
	default:
	}
}

func (kv *kvReplica) run() {
	for {
		select {
		case <-kv.stop:
			return
		case <-kv.kick:
		}
		kv.catchUp()
	}
}

// DropAbove drops what a log truncation to end removed: the pre-write
// buffer, and the whole store if it applied past end (which only an
// unclean election can cause: applied records are below the high
// watermark, which truncation never crosses). The store is then rebuilt
// from the log.
func (kv *kvReplica) DropAbove(end int64) {
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	kv.bufMu.Lock()
	kv.buf.Reset()
	kv.bufEpoch = -1
	kv.bufMu.Unlock()
	st := kv.store.Load()
	applied, err := st.AppliedOffset()
	if err != nil || applied <= end {
		return
	}
	kv.log.Warn("log truncated below the KV store's applied offset: rebuilding the store from the log",
		"bucket", kv.id, "applied_offset", applied, "truncated_to", end)
	if err := kv.resetLocked(); err != nil {
		kv.log.Error("rebuild KV store", "bucket", kv.id, "err", err)
	}
}

// resetLocked replaces the store with an empty one; the applier refills it.
func (kv *kvReplica) resetLocked() error {
	old := kv.store.Load()
	if err := old.Close(); err != nil {
		return err
	}
	if err := os.RemoveAll(kv.dir); err != nil {
		return err
	}
	st, err := kvstore.Open(kv.cfg)
	if err != nil {
		return err
	}
	st.CacheWrites(old.CachingWrites()) // a leader's store caches what it writes
	kv.store.Store(st)
	kv.wake()
	return nil
}
