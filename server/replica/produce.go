package replica

import (
	"context"
	"errors"
	"time"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Acks values of a produce request.
const (
	AcksAll    = -1
	AcksNone   = 0
	AcksLeader = 1
)

// Produce appends a batch on the bucket's leader and answers per acks. A
// unary call takes its turn as it arrives, as a stream's call does.
func (m *Manager) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	return m.StartWrite(&pb.WriteCall{Call: &pb.WriteCall_Produce{Produce: req}})(ctx)
}

// writeTarget runs the checks every write request shares and returns the
// replica it goes to and how long it may wait for its acks.
func (m *Manager) writeTarget(tableID uint64, bucket, acks int32, batchBytes int, timeoutMs int32) (*Replica, time.Duration, error) {
	id := BucketID{TableID: tableID, Bucket: bucket}
	r := m.replica(id)
	if r == nil {
		return nil, 0, m.missingReplica(id)
	}
	if acks != AcksAll && acks != AcksNone && acks != AcksLeader {
		return nil, 0, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "acks must be -1 (all), 0 or 1, not %d", acks)
	}
	if batchBytes > m.cfg.MaxBatchBytes {
		return nil, 0, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "batch of %d bytes over the %d-byte limit (%s)", batchBytes, m.cfg.MaxBatchBytes, MaxBatchBytesFlag)
	}
	timeout := DefaultProduceTimeout
	if timeoutMs > 0 {
		timeout = time.Duration(timeoutMs) * time.Millisecond
	}
	return r, timeout, nil
}

// missingReplica explains why this node has no replica of a bucket.
// Table and partition ids only grow (from one counter): an unknown id at
// or below the largest this node has seen belongs to a dropped table or
// partition; a larger one to one whose creation has not reached this node
// yet (retriable, like a leader not yet known). A table whose metadata
// this node cannot use says so, with the reason; a partitioned table has
// no buckets of its own.
func (m *Manager) missingReplica(id BucketID) error {
	m.mu.Lock()
	info, known := m.tables[id.TableID]
	partitioned := m.metas[id.TableID] != nil && m.metas[id.TableID].partitioned
	unusable := m.unusable[id.TableID]
	maxID := m.maxTableID
	m.mu.Unlock()
	switch {
	case unusable != nil:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "node %d cannot serve table %d: %v", m.cfg.NodeID, id.TableID, unusable)
	case partitioned:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s (%d) is partitioned: its buckets are its partitions', each under the partition's id", m.metas[id.TableID].qualified(), id.TableID)
	case !known && id.TableID <= maxID:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "table or partition %d does not exist (dropped)", id.TableID)
	case !known:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "table or partition %d is not known on node %d yet", id.TableID, m.cfg.NodeID)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d holds no replica of bucket %s of %s", m.cfg.NodeID, id, info.name)
}

// checkBatch validates a produced batch against the table: structure, CRC,
// payload format, schema version and every row.
func (r *Replica) checkBatch(data []byte) (record.Batch, error) {
	b, err := wholeBatch(data)
	if err != nil {
		return nil, err
	}
	info := r.table()
	if info.primaryKey {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s has a primary key: write it with upserts, not appends", info.name)
	}
	format := b.PayloadFormat()
	if (format != record.PayloadRows && format != record.PayloadArrow) || !b.AppendOnly() || b.Projected() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "a log table takes append-only row or Arrow batches")
	}
	schema, err := r.batchSchema(b)
	if err != nil {
		return nil, err
	}
	if format == record.PayloadArrow {
		return b, r.checkArrow(info, schema, b)
	}
	it, _, err := b.Records(r.mgr.codec(), nil)
	if err != nil {
		return nil, RecordsError(err)
	}
	for it.Next() {
		rec := it.Record()
		if rec.Change != record.AppendOnly {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: change %v in a log table", rec.Offset-b.BaseOffset(), rec.Change)
		}
		if err := record.ValidateRow(schema, rec.Data); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "record %d: %v", rec.Offset-b.BaseOffset(), err)
		}
	}
	if err := it.Err(); err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	return b, nil
}

// checkArrow validates the Arrow payload of a produced batch of schema s
// (a version of info's table): its structure, its record count, every
// value, and what it inflates to (at most the batch limit).
func (r *Replica) checkArrow(info *tableInfo, s record.Schema, b record.Batch) error {
	d, err := info.arrowDecoder(b.SchemaID(), s, r.mgr.cfg.MaxBatchBytes)
	if err != nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	defer info.releaseDecoder(b.SchemaID(), d)
	err = d.Validate(b.Payload(), int(b.RecordCount()))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, arrowlog.ErrBodyTooLarge):
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "%v (%s)", err, MaxBatchBytesFlag)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
}

// MaxBatchBytesFlag is the setting that raises Config.MaxBatchBytes, named
// in the errors of requests it refuses.
const MaxBatchBytesFlag = "floe serve --max-batch-bytes"

// RecordsError is the wire error of a produced batch whose records cannot
// be read: TOO_LARGE, naming the limit, for a payload that inflates past
// it; INVALID_RECORD for anything else.
func RecordsError(err error) error {
	if errors.Is(err, record.ErrDecompressedTooLarge) {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "%v (%s)", err, MaxBatchBytesFlag)
	}
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
}

// wholeBatch checks that data is exactly one batch with a valid CRC.
func wholeBatch(data []byte) (record.Batch, error) {
	b, err := record.Check(data)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	if len(b) != len(data) {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%d bytes after the batch", len(data)-len(b))
	}
	return b, nil
}

// batchSchema is the schema a client batch is written in: any schema
// version the table has (a writer made before an ALTER TABLE keeps
// writing the version it knows). A version the table does not have is
// refused with UNKNOWN_SCHEMA: the writer's metadata is newer than this
// node's, or the batch is not of this table.
func (r *Replica) batchSchema(b record.Batch) (record.Schema, error) {
	info := r.table()
	s, ok := info.schemaOf(b.SchemaID())
	if !ok {
		return record.Schema{}, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_SCHEMA,
			"batch written with schema version %d; table %s has versions 1 to %d here: refresh the table's metadata and retry",
			b.SchemaID(), info.name, info.schemaID)
	}
	return s, nil
}

// produce runs the leader's append: idempotence, append, durability, acks.
func (r *Replica) produce(ctx context.Context, turn *Turn, b record.Batch, acks int32, timeout time.Duration) (*pb.ProduceResponse, error) {
	return r.write(ctx, turn, b, acks, timeout, func(epoch int32) (logstore.AppendInfo, func() error, error) {
		info, wait, err := r.log.AppendPending(b, epoch)
		if err != nil {
			return info, nil, WireError(err)
		}
		r.writers.table.record(b)
		return info, wait, nil
	})
}

// write runs a leader write of client batch b in its turn: under
// produceMu it checks leadership and the writer's sequence (a retried
// batch is answered with its first offsets) and calls appendFn, which
// appends what b turns into and records it in the writer table; then it
// answers per acks. A nil turn takes one now.
func (r *Replica) write(ctx context.Context, turn *Turn, b record.Batch, acks int32, timeout time.Duration,
	appendFn func(epoch int32) (logstore.AppendInfo, func() error, error)) (*pb.ProduceResponse, error) {
	if turn == nil {
		turn = r.TakeTurn(false)
	}
	var d writeDecision
	var err error
	turn.run(r, func() { d, err = r.decideWrite(b, acks, turn.pipelined, appendFn) })
	switch {
	case err != nil:
		return nil, err
	case d.dup != nil:
		return r.answerDuplicate(ctx, d.dup, acks, d.epoch, timeout)
	}
	return r.finishAppend(ctx, d.info, d.wait, acks, d.epoch, timeout)
}

// writeDecision is what a leader write decided under produceMu: a retry
// to answer with its first offsets (dup), or the append made.
type writeDecision struct {
	epoch int32
	dup   *writerBatch
	info  logstore.AppendInfo
	wait  func() error // waits for the append to be durable
}

// decideWrite checks, with produceMu held, that the replica may take the
// write and its writer's sequence, and appends it with appendFn unless it
// is a retry.
func (r *Replica) decideWrite(b record.Batch, acks int32, pipelined bool,
	appendFn func(epoch int32) (logstore.AppendInfo, func() error, error)) (writeDecision, error) {
	epoch, err := r.leaderFor(acks)
	if err != nil {
		return writeDecision{}, err
	}
	d := writeDecision{epoch: epoch}
	if d.dup, err = r.writers.table.check(b.WriterID(), b.BatchSequence(), pipelined); err != nil || d.dup != nil {
		return d, err
	}
	d.info, d.wait, err = appendFn(epoch)
	return d, err
}

// leaderFor asks the protocol core, with produceMu held, whether the
// replica may take a write with these acks, and returns its leader epoch.
func (r *Replica) leaderFor(acks int32) (int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d: bucket %s is closing", r.mgr.cfg.NodeID, r.id)
	}
	if err := r.outOfServiceLocked(); err != nil {
		return 0, err
	}
	if err := r.catchingUpErrorLocked(); err != nil {
		return 0, err
	}
	epoch, err := r.core.CheckWrite(int(acks))
	return epoch, r.wireError(err)
}

// answerDuplicate answers a retried batch with its original offsets, once
// they are committed as acks asks.
func (r *Replica) answerDuplicate(ctx context.Context, dup *writerBatch, acks, epoch int32, timeout time.Duration) (*pb.ProduceResponse, error) {
	info := logstore.AppendInfo{BaseOffset: dup.Base, LastOffset: dup.Last, Timestamp: dup.TimestampMs}
	resp, err := r.finishAppend(ctx, info, func() error { return nil }, acks, epoch, timeout)
	if resp != nil {
		resp.Duplicate = true
	}
	return resp, err
}

// finishAppend waits for an appended batch as acks asks and answers.
func (r *Replica) finishAppend(ctx context.Context, info logstore.AppendInfo, wait func() error, acks, epoch int32, timeout time.Duration) (*pb.ProduceResponse, error) {
	resp := &pb.ProduceResponse{BaseOffset: info.BaseOffset, LastOffset: info.LastOffset, TimestampMs: info.Timestamp,
		LeaderEpoch: epoch}
	// Followers long-polling get the batch now, before it is fsynced here:
	// their fetch and fsync overlap the leader's.
	r.mgr.notify()
	if acks == AcksNone {
		// Answered now, committed like any other write once durable.
		r.syncInBackground(info.LastOffset+1, wait)
		return resp, nil
	}
	if err := wait(); err != nil {
		// A failed fsync leaves the log unable to say what is durable: the
		// replica goes out of service, and the write's outcome is unknown
		// to the writer, who retries on the next leader.
		r.maybeFail(err)
		r.mu.Lock()
		failed := r.outOfServiceLocked()
		r.mu.Unlock()
		if failed != nil {
			return nil, failed
		}
		return nil, r.wireError(err)
	}
	r.reportDurable()
	if acks == AcksLeader {
		return resp, nil
	}
	if err := r.waitCommitted(ctx, info.LastOffset, epoch, timeout); err != nil {
		return nil, err
	}
	return resp, nil
}

// StartWrite begins a write call of a node's ordered stream (Tablet.Writes)
// as it arrives: it finds the call's replica and takes the call's turn
// there, so that the writes of a bucket are decided in the order they
// arrived. The returned func runs the rest of the call (checks, the write,
// the wait for acks) and may run concurrently with later calls; it must
// be called once.
func (m *Manager) StartWrite(call *pb.WriteCall) func(ctx context.Context) (*pb.ProduceResponse, error) {
	switch c := call.Call.(type) {
	case *pb.WriteCall_Produce:
		req := c.Produce
		return m.startWrite(req.TableId, req.Bucket, req.Acks, req.Batch, req.TimeoutMs, req.Pipelined,
			func(ctx context.Context, r *Replica, turn *Turn, timeout time.Duration) (*pb.ProduceResponse, error) {
				batch, err := r.checkBatch(req.Batch)
				if err != nil {
					return nil, err
				}
				return r.produce(ctx, turn, batch, req.Acks, timeout)
			})
	case *pb.WriteCall_PutKv:
		req := c.PutKv
		return m.startWrite(req.TableId, req.Bucket, req.Acks, req.Batch, req.TimeoutMs, req.Pipelined,
			func(ctx context.Context, r *Replica, turn *Turn, timeout time.Duration) (*pb.ProduceResponse, error) {
				return r.putKv(ctx, turn, req, timeout)
			})
	}
	err := transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "write call %d carries neither a produce nor a put_kv request", call.Id)
	return func(context.Context) (*pb.ProduceResponse, error) { return nil, err }
}

// startWrite takes a write's turn at its replica; run does the rest. A
// batch written (not answered as a retry's duplicate) counts in the
// table's traffic.
func (m *Manager) startWrite(tableID uint64, bucket, acks int32, batch []byte, timeoutMs int32, pipelined bool,
	run func(ctx context.Context, r *Replica, turn *Turn, timeout time.Duration) (*pb.ProduceResponse, error),
) func(ctx context.Context) (*pb.ProduceResponse, error) {
	r, timeout, err := m.writeTarget(tableID, bucket, acks, len(batch), timeoutMs)
	if err != nil {
		return func(context.Context) (*pb.ProduceResponse, error) { return nil, err }
	}
	turn := r.TakeTurn(pipelined)
	return func(ctx context.Context) (*pb.ProduceResponse, error) {
		defer turn.Forgo()
		resp, err := run(ctx, r, turn, timeout)
		if err == nil && !resp.Duplicate {
			r.table().traffic.noteIn(batch)
		}
		return resp, err
	}
}
