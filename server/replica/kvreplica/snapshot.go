package kvreplica

import (
	"context"

	"github.com/floedb/floe/tiering"
)

// Snapshot stores a snapshot of the store's committed rows, read from one
// view with the offset they cover.
func (kv *kvReplica) Snapshot(ctx context.Context, cfg tiering.KVSnapshotConfig, leaderEpoch int32, previous []string) (tiering.KVSnapshotResult, error) {
	src := func(fn func(key, row []byte) error) (int64, error) { return kv.store.Load().Export(fn) }
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
