package kvreplica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// kvWrite is one checked record of a PutKv batch.
type kvWrite struct {
	key    []byte // store key
	update kvstore.Update
}

// Put merges a batch of upserts and deletes on the leader, appends the
// changelog and answers per acks. The log replica checked the batch's
// frame and schema.
func (kv *kvReplica) Put(ctx context.Context, turn *replica.Turn, b record.Batch, targets []int32, acks int32, timeout time.Duration) (*pb.ProduceResponse, error) {
	writes, err := kv.checkRows(b, targets)
	if err != nil {
		return nil, err
	}
	return kv.put(ctx, turn, b, writes, acks, timeout)
}

// checkRows validates the rows of a PutKv batch and returns its writes,
// each with its store key.
func (kv *kvReplica) checkRows(b record.Batch, targets []int32) ([]kvWrite, error) {
	info := kv.table()
	written, _, ok := info.versionOf(b.SchemaID())
	if !ok {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA,
			"batch written with schema version %d, unknown to table %s here: refresh the table's metadata and retry", b.SchemaID(), info.name)
	}
	upgrade := len(written.Columns) != len(info.schema.Columns)
	partial, err := partialColumns(written, targets)
	if err != nil {
		return nil, err
	}
	relaxed := keyOnlySchema(written)
	it, _, err := b.Records(kv.r.Codec(), nil)
	if err != nil {
		return nil, replica.RecordsError(err)
	}
	writes := make([]kvWrite, 0, b.RecordCount())
	for it.Next() {
		rec := it.Record()
		i := rec.Offset - b.BaseOffset()
		w := kvWrite{update: kvstore.Update{Row: rec.Data, PartialColumns: partial}}
		check := written
		switch rec.Change {
		case record.UpdateAfter, record.Insert:
			if partial != nil {
				check = relaxed
			}
		case record.Delete:
			w.update.Delete, w.update.PartialColumns, check = true, nil, relaxed
		default:
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD,
				"record %d: change %v; a primary-key table takes +U (upsert) and -D (delete)", i, rec.Change)
		}
		if len(rec.Data) > kvstore.MaxRowBytes {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE,
				"record %d: row of %d bytes over the %d-byte limit", i, len(rec.Data), kvstore.MaxRowBytes)
		}
		if err := record.ValidateRow(check, rec.Data); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", i, err)
		}
		if upgrade { // a writer of an older version: its rows, the added columns null (a partial update leaves them be)
			if w.update.Row, err = record.UpgradeRow(check, withColumnsOf(info.schema, check), rec.Data, nil); err != nil {
				return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", i, err)
			}
		}
		pk, err := info.keys.PrimaryKey(nil, w.update.Row)
		if err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", i, err)
		}
		if len(pk) > kvstore.MaxKeyBytes {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD,
				"record %d: primary key of %d bytes over the %d-byte limit", i, len(pk), kvstore.MaxKeyBytes)
		}
		if w.key, err = info.keys.StoreKey(nil, pk); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", i, err)
		}
		writes = append(writes, w)
	}
	if err := it.Err(); err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	return writes, nil
}

// withColumnsOf is cur with the nullability of check's columns where check
// has them: a delete or partial row checked under the relaxed schema
// upgrades to the current one relaxed alike.
func withColumnsOf(cur, check record.Schema) record.Schema {
	out := record.Schema{Columns: append([]record.Column(nil), cur.Columns...), PrimaryKey: cur.PrimaryKey}
	copy(out.Columns, check.Columns)
	return out
}

// partialColumns checks the target columns of a partial update; nil when
// the update sets every column.
func partialColumns(s record.Schema, targets []int32) ([]int, error) {
	if len(targets) == 0 {
		return nil, nil
	}
	out := make([]int, 0, len(targets))
	for _, t := range targets {
		if t < 0 || int(t) >= len(s.Columns) {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"target column %d out of range: the table has %d columns", t, len(s.Columns))
		}
		if slices.Contains(out, int(t)) {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "target column %d listed twice", t)
		}
		out = append(out, int(t))
	}
	if len(out) == len(s.Columns) {
		return nil, nil
	}
	return out, nil
}

// keyOnlySchema is s with every column but the primary key nullable: the
// schema delete rows and partial-update rows must validate under.
func keyOnlySchema(s record.Schema) record.Schema {
	out := record.Schema{Columns: slices.Clone(s.Columns), PrimaryKey: s.PrimaryKey}
	for i := range out.Columns {
		out.Columns[i].Nullable = !slices.Contains(s.PrimaryKey, out.Columns[i].Name)
	}
	return out
}

// put runs the leader's write path: merge every write against the
// pre-write buffer and the store, append the changelog (or a no-op control
// batch when nothing changed, so the writer's sequence is in the log),
// buffer the new rows, and answer per acks.
func (kv *kvReplica) put(ctx context.Context, turn *replica.Turn, b record.Batch, writes []kvWrite, acks int32, timeout time.Duration) (*pb.ProduceResponse, error) {
	return kv.r.Write(ctx, turn, b, acks, timeout, func(epoch int32, appendLog replica.AppendLogFunc) error {
		kv.bufMu.Lock()
		defer kv.bufMu.Unlock()
		if n := kv.buf.Bytes(); n >= kv.tables.cfg.BufferBytes {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
				"bucket %s holds %d MiB of uncommitted writes, its limit: waiting for followers to catch up", kv.id, n>>20)
		}
		changelog, rows, err := kv.merge(b, writes, epoch)
		if err != nil {
			return err
		}
		id := changelog.SchemaID() // the version merge wrote the rows in
		info, err := appendLog(changelog)
		if err != nil {
			return err
		}
		for i, w := range writes {
			if rows[i].changed {
				kv.buf.Put(w.key, kvstore.Row{SchemaID: id, Data: rows[i].row}, info.LastOffset)
			}
		}
		return nil
	})
}

// mergedRow is what one write leaves under its key.
type mergedRow struct {
	row     []byte // nil: absent
	changed bool
}

// merge runs the merge engine over writes, with bufMu held, and builds the
// changelog batch. Nothing is changed: the caller buffers the rows once the
// batch is appended.
func (kv *kvReplica) merge(b record.Batch, writes []kvWrite, epoch int32) (record.Batch, []mergedRow, error) {
	if err := kv.loadBuffer(epoch); err != nil {
		return nil, nil, err
	}
	info := kv.table()
	st := kv.store.Load()
	// The changelog is of the current version, whatever the writer's.
	opts := record.BatchOptions{SchemaID: info.currentID(), Format: record.PayloadRows,
		HasWriter: b.WriterID() != record.NoWriterID, WriterID: b.WriterID(), Sequence: b.BatchSequence()}
	bld := kv.changelogBuilder(opts, len(b))
	current, err := kv.currentRows(st, writes)
	if err != nil {
		return nil, nil, err
	}
	batchRows := map[string]int{} // store key → index in rows of its last write in this batch
	rows := make([]mergedRow, len(writes))
	for i, w := range writes {
		old, err := info.currentRow(current[i].SchemaID, current[i].Data, nil)
		if err != nil {
			return nil, nil, err
		}
		if j, ok := batchRows[string(w.key)]; ok {
			old = rows[j].row
		}
		changes, row, err := kvstore.Merge(info.schema, info.engine, old, w.update, info.opts)
		if err != nil {
			if errors.Is(err, kvstore.ErrDeleteDisabled) {
				return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "record %d: table %s: %v", i, info.name, err)
			}
			return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", i, err)
		}
		if len(row) > kvstore.MaxRowBytes {
			return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE,
				"record %d: merged row of %d bytes over the %d-byte limit", i, len(row), kvstore.MaxRowBytes)
		}
		for _, c := range changes {
			if err := bld.Append(c.Kind, c.Row); err != nil {
				return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "the changelog of this batch exceeds the %d-byte batch limit", record.MaxBatchSize)
			}
		}
		rows[i] = mergedRow{row: row, changed: len(changes) > 0}
		batchRows[string(w.key)] = i
	}
	if bld.Len() == 0 {
		opts.Format = record.PayloadControl
		bld.Reset(opts, 0)
		if err := bld.Append(record.AppendOnly, []byte{byte(record.ControlNoop)}); err != nil {
			return nil, nil, err
		}
	}
	changelog, err := bld.Build()
	if err != nil {
		return nil, nil, pkgerr.Errorf("replica", "build changelog: %w", err)
	}
	// Every row the buffer keeps must outlive the request.
	for i := range rows {
		if rows[i].changed && rows[i].row != nil {
			rows[i].row = slices.Clone(rows[i].row)
		}
	}
	return changelog, rows, nil
}

// keptBuilderBytes bounds the buffer a replica's changelog builder keeps
// between writes; a larger one, grown by an unusually large batch, goes.
const keptBuilderBytes = 4 << 20

// changelogBuilder returns the replica's changelog builder, reset for opts
// and with room for a changelog of a batch of inputBytes: an update writes
// the row before and after, about twice the input. Callers hold bufMu and
// use the batch it builds only while they do.
func (kv *kvReplica) changelogBuilder(opts record.BatchOptions, inputBytes int) *record.BatchBuilder {
	if kv.bld == nil || kv.bld.Cap() > keptBuilderBytes {
		kv.bld = record.NewBatchBuilder(opts, record.MaxBatchSize)
	}
	kv.bld.Reset(opts, record.MaxBatchSize)
	kv.bld.Grow(2 * inputBytes)
	return kv.bld
}

// currentRows returns, at each key's first write in the batch, the row the
// write merges against, with its schema version: the pre-write buffer's,
// else the store's (all read in one view). Other entries have no row.
func (kv *kvReplica) currentRows(st *kvstore.Store, writes []kvWrite) ([]kvstore.Row, error) {
	current := make([]kvstore.Row, len(writes))
	var keys [][]byte
	var at []int
	seen := make(map[string]struct{}, len(writes))
	for i, w := range writes {
		if _, dup := seen[string(w.key)]; dup {
			continue
		}
		seen[string(w.key)] = struct{}{}
		if row, ok := kv.buf.Get(w.key); ok {
			current[i] = row
			continue
		}
		keys = append(keys, w.key)
		at = append(at, i)
	}
	if len(keys) == 0 {
		return current, nil
	}
	rows, err := st.GetBatch(keys)
	if err != nil {
		return nil, replica.WireError(err)
	}
	for n, i := range at {
		current[i] = rows[n]
	}
	return current, nil
}

// loadBuffer makes the pre-write buffer current for leader epoch epoch,
// with bufMu held: on the first write of an epoch it loads the log's tail
// above the store's applied offset, which may still commit in this epoch.
func (kv *kvReplica) loadBuffer(epoch int32) error {
	if kv.bufEpoch == epoch {
		return nil
	}
	kv.buf.Reset()
	if err := kv.r.SyncLog(); err != nil {
		return replica.WireError(err)
	}
	applied, err := kv.store.Load().AppliedOffset()
	if err != nil {
		return replica.WireError(err)
	}
	end := kv.r.EndOffset()
	loaded := 0
	for from := applied; from < end; {
		recs, err := kv.r.ReadBelow(from, end, applyReadBytes)
		if err != nil {
			return replica.WireError(err)
		}
		if len(recs.Data) == 0 {
			recs.Release()
			break
		}
		it := recs.Batches()
		for it.Next() {
			b := it.Batch()
			keys, err := kv.table().keysOf(b)
			if err != nil {
				recs.Release()
				return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA, "%v: retry once this node's metadata has it", err)
			}
			changes, err := kvstore.AppendChanges(nil, b, kv.r.Codec(), keys, from)
			if err != nil {
				recs.Release()
				return replica.WireError(err)
			}
			for _, c := range changes {
				row := kvstore.Row{SchemaID: c.SchemaID}
				if c.Kind != record.Delete {
					row.Data = slices.Clone(c.Row)
				}
				kv.buf.Put(slices.Clone(c.Key), row, b.LastOffset())
				loaded++
			}
		}
		from = recs.NextOffset
		recs.Release()
	}
	kv.bufEpoch = epoch
	kv.log.Info("pre-write buffer loaded", "bucket", kv.id, "leader_epoch", epoch,
		"applied_offset", applied, "end_offset", end, "records", loaded)
	return nil
}
