package kvreplica

import (
	"errors"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
)

// applyReadBytes bounds one log read of the applier; applyChunkBytes one
// Badger transaction (well under Badger's limit for the default memtable).
const (
	applyReadBytes  = 4 << 20
	applyChunkBytes = 512 << 10
)

// applied returns the store's applied offset, or an error when the store
// is closed or stuck.
func (kv *kvReplica) applied() (int64, error) {
	if p := kv.stuck.Load(); p != nil {
		return 0, *p
	}
	return kv.store.Load().AppliedOffset()
}

// applyReadsPerRound bounds the log reads of one catch-up round, so a
// replica far behind takes turns with the others on the applier's workers.
const applyReadsPerRound = 4

// catchUp applies the log to the store towards the high watermark, and
// reports whether a round found more to apply than it may read.
func (kv *kvReplica) catchUp() (more bool) {
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	for reads := 0; ; reads++ {
		select {
		case <-kv.stop:
			return false
		default:
		}
		hw := kv.r.HighWatermark()
		st := kv.store.Load()
		applied, err := st.AppliedOffset()
		if err != nil || applied >= hw {
			return false
		}
		if reads == applyReadsPerRound {
			return true
		}
		if start := kv.r.StartOffset(); applied < start {
			if kv.recoverBelow(st, applied, hw) {
				kv.stuck.Store(nil)
				continue
			}
			err := pkgerr.Errorf("replica", "bucket %s: the KV store needs the log from offset %d, which starts at %d", kv.id, applied, start)
			if kv.stuck.Swap(&err) == nil {
				kv.log.Error("KV store cannot catch up", "bucket", kv.id, "applied_offset", applied, "log_start_offset", start)
			}
			return false
		}
		kv.stuck.Store(nil)
		recs, err := kv.r.ReadBelow(applied, hw, applyReadBytes)
		if err != nil {
			if !errors.Is(err, logstore.ErrClosed) {
				kv.log.Warn("KV apply: read log", "bucket", kv.id, "offset", applied, "err", err)
			}
			return false
		}
		if len(recs.Data) == 0 {
			recs.Release()
			return false
		}
		err = kv.applyRecords(st, recs, applied)
		recs.Release()
		switch {
		case errors.Is(err, errVersionAhead):
			kv.log.Info("KV apply waits for the table's metadata", "bucket", kv.id, "err", err)
			return false
		case errors.Is(err, kvstore.ErrClosed):
			return false
		case err != nil:
			kv.log.Error("KV apply", "bucket", kv.id, "offset", applied, "err", err)
			return false
		}
		if now, err := st.AppliedOffset(); err == nil {
			kv.bufMu.Lock()
			kv.buf.Evict(now)
			kv.bufMu.Unlock()
		}
		kv.r.Notify() // lookups waiting for the store
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
		keys, err := kv.table().keysOf(b)
		if err != nil {
			// What came before it goes in; the rest waits for the
			// metadata (SetTable wakes the applier).
			if applyErr := applyChunked(st, changes, b.BaseOffset()); applyErr != nil {
				return applyErr
			}
			return err
		}
		changes, err = kvstore.AppendChanges(changes, b, kv.r.Codec(), keys, from)
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
