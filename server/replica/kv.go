package replica

import (
	"context"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The KV side of primary-key tables (their stores, the applier, the merge
// of upserts, lookups) lives behind these interfaces, in package
// kvreplica: the log replica drives it with the events below and knows
// nothing of how it stores rows.

// KVTables makes the KV side of the node's primary-key tables.
type KVTables interface {
	// Table reads the key layout and merge properties of a primary-key
	// table from its metadata; an error means metadata this build does not
	// understand, and the table is not served.
	Table(t *pb.TableRecord, name string, schema record.Schema) (KVTable, error)
}

// KVTable opens the KV side of one primary-key table's bucket replicas.
type KVTable interface {
	// Open opens the KV side of r, which is open but not yet serving. It
	// reads r's log through r's exported methods.
	Open(r *Replica) (KV, error)
}

// KV is the KV side of one primary-key bucket replica.
type KV interface {
	// Put merges a checked batch of upserts and deletes on the leader in
	// its turn, appends its changelog through r.Write and answers per acks.
	Put(ctx context.Context, turn *Turn, b record.Batch, targetColumns []int32, acks int32, timeout time.Duration) (*pb.ProduceResponse, error)
	// Lookup and PrefixLookup answer reads on the leader.
	Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error)
	PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error)
	// HWMoved says the high watermark moved: more of the log may be applied.
	HWMoved()
	// DropAbove says the log was truncated to end: state built from
	// offsets at or above it goes.
	DropAbove(end int64)
	// SetLeading says the replica started or stopped leading.
	SetLeading(leading bool)
	// AppliedOffset is the offset below which the store holds the log:
	// the log below it may leave local disk once it is remote.
	AppliedOffset() (int64, error)
	// Snapshot stores a snapshot of the store's rows in remote storage
	// (parts the previous snapshots stored are reused), holding at least
	// every write committed before the call, and returns it, not yet
	// committed.
	Snapshot(ctx context.Context, cfg tiering.KVSnapshotConfig, leaderEpoch int32, previous []string) (tiering.KVSnapshotResult, error)
	// Restore replaces the store's rows with those of the snapshot at
	// manifestKey and returns the offset they cover.
	Restore(ctx context.Context, store tiering.ObjectStore, manifestKey string) (int64, error)
	// Close stops the KV side and closes its store; with remove (the
	// replica is deleted) the store's rows go too.
	Close(remove bool) error
	// SetTable hands the KV side the table's new metadata (ALTER TABLE:
	// a new schema version), made by the same KVTables that opened it.
	SetTable(t KVTable)
}

// PutKv merges a batch of upserts and deletes into a primary-key bucket on
// its leader, appends the changelog and answers per acks.
func (m *Manager) PutKv(ctx context.Context, req *pb.PutKvRequest) (*pb.ProduceResponse, error) {
	return m.StartWrite(&pb.WriteCall{Call: &pb.WriteCall_PutKv{PutKv: req}})(ctx)
}

// putKv checks a PutKv batch and runs it in its turn.
func (r *Replica) putKv(ctx context.Context, turn *Turn, req *pb.PutKvRequest, timeout time.Duration) (*pb.ProduceResponse, error) {
	if r.kv == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s has no primary key: append to it, upserts need a primary-key table", r.table().name)
	}
	b, err := r.checkUpsertBatch(req.Batch)
	if err != nil {
		return nil, err
	}
	return r.kv.Put(ctx, turn, b, req.TargetColumns, req.Acks, timeout)
}

// checkUpsertBatch checks the frame of a PutKv batch: one whole batch of
// rows that are not append-only, in one of the table's schema versions.
// The KV side checks the rows and brings them to the current version.
func (r *Replica) checkUpsertBatch(data []byte) (record.Batch, error) {
	b, err := wholeBatch(data)
	if err != nil {
		return nil, err
	}
	if b.PayloadFormat() != record.PayloadRows || b.AppendOnly() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "upserts come in row batches that are not append-only")
	}
	if _, err := r.batchSchema(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Lookup answers point lookups of primary keys on the bucket's leader.
func (m *Manager) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error) {
	r, err := m.kvReplica(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	resp, err := r.kv.Lookup(ctx, req)
	if err == nil {
		r.table().traffic.noteOut(len(resp.Rows), rowCount(resp.RowSizes))
	}
	return resp, err
}

// PrefixLookup answers the rows of one bucket-key value on the bucket's
// leader.
func (m *Manager) PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	r, err := m.kvReplica(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	resp, err := r.kv.PrefixLookup(ctx, req)
	if err == nil {
		bytes := 0
		for _, row := range resp.Rows {
			bytes += len(row)
		}
		r.table().traffic.noteOut(bytes, len(resp.Rows))
	}
	return resp, err
}

// kvReplica returns the replica of a primary-key bucket.
func (m *Manager) kvReplica(tableID uint64, bucket int32) (*Replica, error) {
	id := BucketID{TableID: tableID, Bucket: bucket}
	r := m.replica(id)
	if r == nil {
		return nil, m.missingReplica(id)
	}
	if r.kv == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s has no primary key: lookups need one (scan it with consume)", r.table().name)
	}
	return r, nil
}
