package kvreplica

import (
	"errors"
	"io/fs"
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
// its store in the node's database, kept at the replica's high watermark by
// the node's applier, the leader's pre-write buffer, and the barriers of
// linearizable lookups.
type kvReplica struct {
	r       Log
	id      string // the bucket, for logs
	storeID kvstore.StoreID
	// tbl is the table's metadata, replaced by SetTable (ALTER TABLE).
	tbl    atomic.Pointer[table]
	tables *Tables
	log    *slog.Logger

	store atomic.Pointer[kvstore.Store]
	// applyMu serializes catch-up rounds and store resets.
	applyMu sync.Mutex
	// stuck is set while the store cannot catch up (the log no longer
	// holds the records it needs); lookups then fail.
	stuck atomic.Pointer[error]
	// queued is set while the replica waits in the applier's queue.
	queued atomic.Bool

	// bufMu guards buf, bufEpoch and bld. The write path holds the log
	// replica's write lock first.
	bufMu    sync.Mutex
	buf      *kvstore.Buffer
	bufEpoch int32 // the leader epoch the buffer was loaded in; -1: none
	// bld builds the changelog of each write, reusing its buffer.
	bld *record.BatchBuilder

	barriers barrierQueue

	stop chan struct{}
	wg   sync.WaitGroup
}

var _ replica.KV = (*kvReplica)(nil)

// table is the table's metadata as last set.
func (kv *kvReplica) table() *table { return kv.tbl.Load() }

// SetTable takes the table's new metadata (a replica.KVTable of this
// package), and wakes the applier: changelog batches of a schema version
// the metadata lacked wait for it (errVersionAhead).
func (kv *kvReplica) SetTable(t replica.KVTable) {
	if tt, ok := t.(*table); ok {
		kv.tbl.Store(tt)
		kv.wake()
	}
}

// openKV opens the replica's store in the node's database and queues it
// for a catch-up round.
func openKV(r Log, t *table) (*kvReplica, error) {
	tables := t.tables
	id := r.ID()
	kv := &kvReplica{r: r, id: id.String(), storeID: kvstore.StoreID{Table: id.TableID, Bucket: uint32(id.Bucket)},
		tables: tables, log: tables.log, buf: kvstore.NewBuffer(), bufEpoch: -1, stop: make(chan struct{})}
	kv.tbl.Store(t)
	st, err := tables.openStore(kv.storeID)
	if err != nil {
		return nil, err
	}
	kv.store.Store(st)
	if err := kv.importLegacy(filepath.Join(r.Dir(), legacyStoreDir)); err != nil {
		st.Close()
		return nil, err
	}
	if applied, err := kv.store.Load().AppliedOffset(); err == nil && applied > r.EndOffset() {
		kv.log.Warn("KV store is ahead of the log: rebuilding it from the log", "bucket", kv.id,
			"applied_offset", applied, "end_offset", r.EndOffset())
		if err := kv.resetLocked(); err != nil {
			kv.store.Load().Close()
			return nil, err
		}
	}
	kv.barriers.kv = kv
	tables.opened(kv)
	kv.wake()
	return kv, nil
}

// openStore opens a store once no drop of it is pending.
func (t *Tables) openStore(id kvstore.StoreID) (*kvstore.Store, error) {
	t.dropper.wait(id)
	return t.db.Open(id)
}

// Close stops the barriers and waits for a running catch-up round, then
// closes the store; with remove, the store's rows are deleted (in the
// background, with other removed replicas').
func (kv *kvReplica) Close(remove bool) error {
	kv.tables.closed(kv)
	close(kv.stop)
	kv.barriers.close()
	kv.wg.Wait()
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	err := kv.store.Load().Close()
	if remove {
		kv.tables.dropper.drop(kv.storeID)
	}
	return err
}

// HWMoved wakes the applier: the high watermark moved.
func (kv *kvReplica) HWMoved() { kv.wake() }

// AppliedOffset is the store's applied offset.
func (kv *kvReplica) AppliedOffset() (int64, error) { return kv.applied() }

// SetLeading makes the store cache the rows it writes while the replica
// leads: they are the ones its next upserts of those keys merge against
// and lookups, which come to the leader, ask for.
func (kv *kvReplica) SetLeading(leading bool) {
	kv.store.Load().CacheWrites(leading)
}

// wake queues a catch-up round: the high watermark may have moved.
func (kv *kvReplica) wake() { kv.tables.applier.wake(kv) }

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

// resetLocked replaces the store with an empty one (its rows dropped now,
// not in the background); the applier refills it.
func (kv *kvReplica) resetLocked() error {
	if _, err := kv.emptyStore(); err != nil {
		return err
	}
	kv.wake()
	return nil
}

// emptyStore closes the replica's store, drops its rows and puts an empty
// store in its place, caching writes as the old one did (a leader's store
// caches what it writes).
func (kv *kvReplica) emptyStore() (*kvstore.Store, error) {
	old := kv.store.Load()
	if err := old.Close(); err != nil {
		return nil, err
	}
	if err := kv.tables.db.Drop(kv.storeID); err != nil {
		return nil, err
	}
	st, err := kv.tables.db.Open(kv.storeID)
	if err != nil {
		return nil, err
	}
	st.CacheWrites(old.CachingWrites())
	kv.store.Store(st)
	return st, nil
}

// legacyStoreDir is where earlier builds kept a replica's own Badger
// database, in the replica's folder.
const legacyStoreDir = "kv"

// importLegacy moves a store that an earlier build kept in dir into the
// node's database, once: the folder goes when the import is complete.
func (kv *kvReplica) importLegacy(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	kv.log.Info("moving the KV store of an earlier build into the node's database", "bucket", kv.id, "dir", dir)
	// Whatever an interrupted import left goes first.
	st, err := kv.emptyStore()
	if err != nil {
		return err
	}
	rows, err := st.ImportLegacy(dir)
	if err != nil {
		return err
	}
	applied, _ := st.AppliedOffset()
	kv.log.Info("moved the KV store of an earlier build", "bucket", kv.id, "rows", rows, "applied_offset", applied)
	return nil
}
