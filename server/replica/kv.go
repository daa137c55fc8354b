package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// applyReadBytes bounds one log read of the applier; applyChunkBytes one
// Badger transaction (well under Badger's limit for the default memtable).
const (
	applyReadBytes  = 4 << 20
	applyChunkBytes = 512 << 10
)

// kvReplica is the KV side of a primary-key bucket replica: its Badger
// store, the applier that keeps the store at the replica's high watermark
// (on leaders and followers alike, so a new leader serves lookups at once),
// the leader's pre-write buffer, and the barriers of linearizable lookups.
type kvReplica struct {
	r    *Replica
	dir  string
	cfg  kvstore.Config
	info *kvTableInfo

	store atomic.Pointer[kvstore.Store]
	// applyMu serializes catch-up rounds and store resets.
	applyMu sync.Mutex
	// stuck is set while the store cannot catch up (the log no longer
	// holds the records it needs); lookups then fail.
	stuck atomic.Pointer[error]

	// bufMu guards buf, bufEpoch and bld. The write path holds the replica's
	// produceMu first.
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

// openKV opens the replica's store and starts its applier.
func openKV(r *Replica, info *kvTableInfo) (*kvReplica, error) {
	kv := &kvReplica{r: r, dir: filepath.Join(r.dir, "kv"), info: info, buf: kvstore.NewBuffer(), bufEpoch: -1,
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
	kv.cfg = r.mgr.cfg.KV
	kv.cfg.Dir = kv.dir
	kv.cfg.Logger = r.mgr.log.With("bucket", r.id.String(), "component", "badger")
	st, err := kvstore.Open(kv.cfg)
	if err != nil {
		return nil, err
	}
	kv.store.Store(st)
	if applied, err := st.AppliedOffset(); err == nil && applied > r.log.EndOffset() {
		r.mgr.log.Warn("KV store is ahead of the log: rebuilding it from the log", "bucket", r.id.String(),
			"applied_offset", applied, "end_offset", r.log.EndOffset())
		if err := kv.resetLocked(); err != nil {
			return nil, err
		}
	}
	kv.barriers.kv = kv
	kv.wg.Go(kv.run)
	kv.wake()
	return kv, nil
}

// close stops the applier and the barriers and closes the store.
func (kv *kvReplica) close() error {
	close(kv.stop)
	kv.barriers.close()
	kv.wg.Wait()
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	return kv.store.Load().Close()
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

// applied returns the store's applied offset, or an error when the store
// is closed or stuck.
func (kv *kvReplica) applied() (int64, error) {
	if p := kv.stuck.Load(); p != nil {
		return 0, *p
	}
	return kv.store.Load().AppliedOffset()
}

// catchUp applies the log to the store up to the high watermark.
func (kv *kvReplica) catchUp() {
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	for {
		select {
		case <-kv.stop:
			return
		default:
		}
		_, _, _, hw := kv.r.state()
		st := kv.store.Load()
		applied, err := st.AppliedOffset()
		if err != nil || applied >= hw {
			return
		}
		if start := kv.r.log.StartOffset(); applied < start {
			err := fmt.Errorf("replica: bucket %s: the KV store needs the log from offset %d, which starts at %d", kv.r.id, applied, start)
			if kv.stuck.Swap(&err) == nil {
				kv.r.mgr.log.Error("KV store cannot catch up", "bucket", kv.r.id.String(), "applied_offset", applied, "log_start_offset", start)
			}
			return
		}
		kv.stuck.Store(nil)
		recs, err := kv.r.log.ReadBelow(applied, hw, applyReadBytes)
		if err != nil {
			if !errors.Is(err, logstore.ErrClosed) {
				kv.r.mgr.log.Warn("KV apply: read log", "bucket", kv.r.id.String(), "offset", applied, "err", err)
			}
			return
		}
		if len(recs.Data) == 0 {
			recs.Release()
			return
		}
		err = kv.applyRecords(st, recs, applied)
		recs.Release()
		if err != nil {
			if !errors.Is(err, kvstore.ErrClosed) {
				kv.r.mgr.log.Error("KV apply", "bucket", kv.r.id.String(), "offset", applied, "err", err)
			}
			return
		}
		if now, err := st.AppliedOffset(); err == nil {
			kv.bufMu.Lock()
			kv.buf.Evict(now)
			kv.bufMu.Unlock()
		}
		kv.r.mgr.notify() // lookups waiting for the store
	}
}

// applyRecords writes the changelog of recs at offsets from onwards to the
// store, in transactions of about applyChunkBytes.
func (kv *kvReplica) applyRecords(st *kvstore.Store, recs *logstore.Records, from int64) error {
	var changes []kvstore.Change
	size := 0
	it := recs.Batches()
	next := from
	for it.Next() {
		b := it.Batch()
		n := len(changes)
		var err error
		changes, err = kvstore.AppendChanges(changes, b, kv.r.mgr.codec(), kv.info.keys, from)
		if err != nil {
			return err
		}
		for _, c := range changes[n:] {
			size += len(c.Key) + len(c.Row) + 32
		}
		next = b.NextOffset()
		if size >= applyChunkBytes {
			if err := applyChunked(st, changes, next); err != nil {
				return err
			}
			changes, size = changes[:0], 0
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return applyChunked(st, changes, next)
}

// applyChunked applies changes ending at next, split into transactions of
// about applyChunkBytes at record boundaries; a transaction Badger finds
// too large (a small memtable, small rows kept in the LSM) is split in
// halves until it fits.
func applyChunked(st *kvstore.Store, changes []kvstore.Change, next int64) error {
	chunk := applyChunkBytes
	for len(changes) > 0 {
		n, size := 0, 0
		for n < len(changes) && (n == 0 || size < chunk) {
			size += len(changes[n].Key) + len(changes[n].Row) + 32
			n++
		}
		end := next
		if n < len(changes) {
			end = changes[n-1].Offset + 1
		}
		err := st.Apply(changes[:n], end)
		if errors.Is(err, kvstore.ErrBatchTooLarge) && n > 1 {
			chunk = max(size/2, 1)
			continue
		}
		if err != nil {
			return err
		}
		changes = changes[n:]
	}
	return st.Apply(nil, next)
}

// truncated drops what a log truncation to end removed: the pre-write
// buffer, and the whole store if it applied past end (which only an
// unclean election can cause: applied records are below the high
// watermark, which truncation never crosses). The store is then rebuilt
// from the log.
func (kv *kvReplica) truncated(end int64) {
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
	kv.r.mgr.log.Warn("log truncated below the KV store's applied offset: rebuilding the store from the log",
		"bucket", kv.r.id.String(), "applied_offset", applied, "truncated_to", end)
	if err := kv.resetLocked(); err != nil {
		kv.r.mgr.log.Error("rebuild KV store", "bucket", kv.r.id.String(), "err", err)
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

// The node's value-log collector: every kvGCInterval it checks each KV
// store for a value-log file that is mostly garbage, rewrites at most one
// per store per round, and starts another round at once while any store had
// one. After each rewrite it rests as long as the rewrite took: with a
// backlog it takes about half a core, enough to reclaim overwrites as fast
// as a node's stores write them (a rewrite checks every row of a 64 MiB
// file, about a second here), and it never rewrites files back to back.
const (
	kvGCInterval   = 5 * time.Second
	kvGCRestFactor = 1
)

// gcTarget is what the collector needs of a store.
type gcTarget interface {
	CollectGarbage(maxFiles int) (int, error)
}

// collectKVGarbage reclaims the value-log space of overwritten and deleted
// rows in every KV store of the node until the manager closes.
func (m *Manager) collectKVGarbage() {
	defer m.wg.Done()
	tick := time.NewTicker(kvGCInterval)
	defer tick.Stop()
	rest := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-m.stop:
			return false
		case <-t.C:
			return true
		}
	}
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		for m.collectKVGarbageRound(m.kvStores(), rest) {
		}
	}
}

// kvStores lists the node's KV replicas with their current stores.
func (m *Manager) kvStores() map[string]gcTarget {
	m.mu.Lock()
	defer m.mu.Unlock()
	stores := map[string]gcTarget{}
	for _, r := range m.replicas {
		if r.kv != nil {
			stores[r.id.String()] = r.kv.store.Load()
		}
	}
	return stores
}

// collectKVGarbageRound rewrites at most one file of each store, calling
// rest after each rewrite with kvGCRestFactor times its duration; rest
// returning false stops the round. It reports whether the round rewrote
// anything and may be repeated.
func (m *Manager) collectKVGarbageRound(stores map[string]gcTarget, rest func(time.Duration) bool) bool {
	rewrote := false
	for bucket, st := range stores {
		start := time.Now()
		n, err := st.CollectGarbage(1)
		took := time.Since(start)
		switch {
		case err != nil && !errors.Is(err, kvstore.ErrClosed):
			m.log.Warn("KV value-log GC", "bucket", bucket, "err", err)
		case n > 0:
			rewrote = true
			m.log.Debug("KV value-log GC", "bucket", bucket, "files_rewritten", n, "took", took)
			if !rest(took * kvGCRestFactor) {
				return false
			}
		}
	}
	return rewrote
}
