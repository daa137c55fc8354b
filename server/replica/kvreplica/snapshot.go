package kvreplica

import (
	"context"
	"time"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
)

// Snapshot stores a snapshot of the store's committed rows, read from one
// view with the offset they cover.
func (kv *kvReplica) Snapshot(ctx context.Context, cfg tiering.KVSnapshotConfig, leaderEpoch int32, previous []string) (tiering.KVSnapshotResult, error) {
	// Every write acknowledged before the call is in the snapshot: the
	// store first applies up to the high watermark as the call found it
	// (the applier runs behind it).
	if _, _, err := kv.readFence(ctx, false); err != nil {
		return tiering.KVSnapshotResult{}, err
	}
	src := func(fn func(key []byte, schemaID int16, row []byte) error) (int64, error) {
		return kv.store.Load().Export(func(key []byte, row kvstore.Row) error { return fn(key, row.SchemaID, row.Data) })
	}
	return tiering.TakeKVSnapshot(ctx, cfg, leaderEpoch, previous, src)
}

// Restore empties the store and loads the snapshot's rows into it, the
// applier held off meanwhile; the store then says it applied the log up
// to the snapshot's offset. A restore cut short leaves a store that
// applied nothing, which the next restore (or a replay from the log)
// empties first.
func (kv *kvReplica) Restore(ctx context.Context, store tiering.ObjectStore, manifestKey string) (int64, error) {
	kv.applyMu.Lock()
	defer kv.applyMu.Unlock()
	return kv.restoreLocked(ctx, store, manifestKey)
}

// restoreLocked is Restore with applyMu held.
func (kv *kvReplica) restoreLocked(ctx context.Context, store tiering.ObjectStore, manifestKey string) (int64, error) {
	kv.bufMu.Lock()
	kv.buf.Reset()
	kv.bufEpoch = -1
	kv.bufMu.Unlock()
	st, err := kv.emptyStore()
	if err != nil {
		return 0, err
	}
	loader, err := st.NewLoader()
	if err != nil {
		return 0, err
	}
	m, err := tiering.RestoreKVSnapshot(ctx, store, manifestKey, loader)
	if err != nil {
		loader.Cancel()
		return 0, err
	}
	rows, err := loader.Finish(m.Offset)
	if err != nil {
		return 0, err
	}
	kv.log.Info("restored KV store from a snapshot", "bucket", kv.id, "rows", rows, "offset", m.Offset, "manifest", manifestKey)
	kv.wake()
	return m.Offset, nil
}

// recoverTimeout bounds one remote read or restore of a store that needs
// the changelog below the local log's start.
const recoverTimeout = 5 * time.Minute

// recoverBelow brings a store that needs the changelog below the local
// log's start (it was lost or damaged, and tiering deleted the local
// copies it would replay) forward, with applyMu held: it restores the
// newest committed KV snapshot when that is past the store's applied
// offset, else applies the next remote batches below hw. It reports
// whether it moved the store.
func (kv *kvReplica) recoverBelow(st *kvstore.Store, applied, hw int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), recoverTimeout)
	defer cancel()
	if snap, store := kv.r.NewestKVSnapshot(), kv.r.RemoteStore(); snap != nil && store != nil && snap.Offset > applied {
		kv.log.Warn("KV store needs the changelog below the local log's start: restoring it from the newest snapshot",
			"bucket", kv.id, "applied_offset", applied, "snapshot_offset", snap.Offset)
		if _, err := kv.restoreLocked(ctx, store, snap.ManifestKey); err != nil {
			kv.log.Error("restore KV store from a snapshot", "bucket", kv.id, "err", err)
			return false
		}
		return true
	}
	data, err := kv.r.ReadRemoteBelow(ctx, applied, applyReadBytes)
	if err != nil {
		kv.log.Warn("KV apply: read the remote log", "bucket", kv.id, "offset", applied, "err", err)
		return false
	}
	// Only what this replica's high watermark covers, like the local log.
	keep := 0
	for it := record.NewBatchIterator(data, false); it.Next() && it.Batch().NextOffset() <= hw; {
		keep = it.Pos()
	}
	if keep == 0 {
		return false
	}
	if err := kv.applyRecords(st, &logstore.Records{Data: data[:keep]}, applied); err != nil {
		kv.log.Error("KV apply from the remote log", "bucket", kv.id, "offset", applied, "err", err)
		return false
	}
	return true
}
