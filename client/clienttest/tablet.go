package clienttest

import (
	"context"
	"time"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// writerHistory is how many batches per writer a bucket remembers.
const writerHistory = 5

// bucketLog is one bucket: its leader and its log.
type bucketLog struct {
	leader  uint32
	epoch   int32
	batches []record.Batch // stamped copies, in offset order
	end     int64          // log end offset
	hwCap   int64          // -1: the high watermark is the log end
	writers map[int64][]writtenBatch
	rows    map[string][]byte // a primary-key table's rows, by primary key
}

// writtenBatch is what a bucket remembers of a writer's batch.
type writtenBatch struct {
	sequence    int32
	base, last  int64
	timestampMs int64
}

func newBucketLog(leader uint32) *bucketLog {
	return &bucketLog{leader: leader, epoch: 1, hwCap: -1, writers: make(map[int64][]writtenBatch),
		rows: make(map[string][]byte)}
}

func (b *bucketLog) highWatermark() int64 {
	if b.hwCap >= 0 {
		return min(b.hwCap, b.end)
	}
	return b.end
}

// tabletService serves one node's Tablet calls.
type tabletService struct {
	c    *Cluster
	node uint32
}

func (s *tabletService) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	c := s.c
	if err := c.passProduceGate(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.produces++
	t := c.byID[req.TableId]
	if t == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "table %d", req.TableId)
	}
	if req.Bucket < 0 || int(req.Bucket) >= len(t.buckets) {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "no bucket %d", req.Bucket)
	}
	b := t.buckets[req.Bucket]
	if b.leader != s.node {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d leads bucket %d", b.leader, req.Bucket)
	}
	f, err := c.takeFaultLocked(bucketRef{req.TableId, req.Bucket})
	if err != nil {
		return nil, err
	}
	if t.keys != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "table %d has a primary key", req.TableId)
	}
	batch, err := checkBatch(t, c.codec, req.Batch)
	if err != nil {
		return nil, err
	}
	resp, err := s.c.appendLocked(b, batch)
	if err != nil {
		return nil, err
	}
	if f != nil {
		return nil, transport.Errorf(f.code, "injected after append")
	}
	return resp, nil
}

// checkBatch checks a produced batch as a leader would.
func checkBatch(t *table, codec *record.Codec, data []byte) (record.Batch, error) {
	batch, err := record.Check(data)
	if err != nil || len(batch) != len(data) {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "batch: %v", err)
	}
	if !batch.AppendOnly() || batch.PayloadFormat() != record.PayloadRows ||
		int32(batch.SchemaID()) != t.rec.Schemas[len(t.rec.Schemas)-1].Id {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "batch attributes %#x, schema %d",
			batch.Attributes(), batch.SchemaID())
	}
	it, _, err := batch.Records(codec, nil)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	for it.Next() {
		r := it.Record()
		if r.Change != record.AppendOnly {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "change type %v", r.Change)
		}
		if err := record.ValidateRow(t.schema, r.Data); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
		}
	}
	if err := it.Err(); err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
	}
	return append(record.Batch(nil), batch...), nil
}

// passProduceGate waits while a test holds produce calls.
func (c *Cluster) passProduceGate(ctx context.Context) error {
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeFaultLocked takes the next injected write fault of a bucket: an
// error to answer now, or a fault to answer after appending.
func (c *Cluster) takeFaultLocked(ref bucketRef) (*fault, error) {
	q := c.faults[ref]
	if len(q) == 0 {
		return nil, nil
	}
	f := &q[0]
	c.faults[ref] = q[1:]
	if !f.afterAppend {
		return nil, transport.Errorf(f.code, "injected before append")
	}
	return f, nil
}

// appendLocked applies the writer-sequence rules and appends.
func (c *Cluster) appendLocked(b *bucketLog, batch record.Batch) (*pb.ProduceResponse, error) {
	if dup, err := b.checkSequence(batch.WriterID(), batch.BatchSequence()); dup != nil || err != nil {
		return dup, err
	}
	return c.appendStampedLocked(b, batch), nil
}

// checkSequence applies the writer-sequence rules to a writer's batch: the
// answer of a batch already written, or an error for one out of order.
func (b *bucketLog) checkSequence(writer int64, seq int32) (*pb.ProduceResponse, error) {
	if writer < 0 {
		return nil, nil
	}
	seen := b.writers[writer]
	for _, w := range seen {
		if w.sequence == seq {
			return &pb.ProduceResponse{BaseOffset: w.base, LastOffset: w.last, TimestampMs: w.timestampMs,
				LeaderEpoch: b.epoch, Duplicate: true}, nil
		}
	}
	want := int32(0)
	if n := len(seen); n > 0 {
		want = seen[n-1].sequence + 1
	}
	if seq != want {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE,
			"writer %d: sequence %d, want %d", writer, seq, want)
	}
	return nil, nil
}

// appendStampedLocked stamps a batch, appends it and remembers its writer.
func (c *Cluster) appendStampedLocked(b *bucketLog, batch record.Batch) *pb.ProduceResponse {
	writer, seq := batch.WriterID(), batch.BatchSequence()
	now := time.Now().UnixMilli()
	batch.SetBaseOffset(b.end)
	batch.SetCommitTimestamp(now)
	batch.SetLeaderEpoch(b.epoch)
	b.batches = append(b.batches, batch)
	w := writtenBatch{sequence: seq, base: b.end, last: batch.LastOffset(), timestampMs: now}
	b.end = batch.NextOffset()
	if writer >= 0 {
		h := append(b.writers[writer], w)
		if len(h) > writerHistory {
			h = h[len(h)-writerHistory:]
		}
		b.writers[writer] = h
	}
	c.broadcastLocked()
	return &pb.ProduceResponse{BaseOffset: w.base, LastOffset: w.last, TimestampMs: now, LeaderEpoch: b.epoch}
}

// Fetch returns whole batches below the high watermark, waiting up to
// max_wait_ms for min_bytes.
func (s *tabletService) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	c := s.c
	wait := time.NewTimer(time.Duration(req.MaxWaitMs) * time.Millisecond)
	defer wait.Stop()
	for {
		c.mu.Lock()
		resp, bytes, failed := s.fetchLocked(req)
		changed := c.changed
		c.mu.Unlock()
		if failed || bytes >= max(int(req.MinBytes), 1) {
			return resp, nil
		}
		select {
		case <-changed:
		case <-wait.C:
			return resp, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fetchLocked builds a fetch answer; failed reports a bucket error.
func (s *tabletService) fetchLocked(req *pb.FetchRequest) (resp *pb.FetchResponse, bytes int, failed bool) {
	c := s.c
	resp = &pb.FetchResponse{}
	budget := int(req.MaxBytes)
	for _, fb := range req.Buckets {
		out := &pb.FetchedBucket{TableId: fb.TableId, Bucket: fb.Bucket}
		resp.Buckets = append(resp.Buckets, out)
		fail := func(code pb.ErrorCode, msg string) {
			out.ErrorCode, out.Error = code, msg
			failed = true
		}
		t := c.byID[fb.TableId]
		if t == nil || fb.Bucket < 0 || int(fb.Bucket) >= len(t.buckets) {
			fail(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "unknown table or bucket")
			continue
		}
		b := t.buckets[fb.Bucket]
		ref := bucketRef{fb.TableId, fb.Bucket}
		if code, ok := c.fetchErrors[ref]; ok {
			delete(c.fetchErrors, ref)
			fail(code, "injected")
			continue
		}
		if b.leader != s.node {
			fail(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "not the leader")
			continue
		}
		hw := b.highWatermark()
		out.HighWatermark, out.LogStartOffset, out.LogEndOffset, out.LeaderEpoch = hw, 0, b.end, b.epoch
		if fb.Offset < 0 || fb.Offset > hw {
			fail(pb.ErrorCode_ERROR_CODE_OUT_OF_RANGE, "offset outside [0, hw]")
			continue
		}
		for _, batch := range b.batches {
			if batch.NextOffset() <= fb.Offset || batch.NextOffset() > hw {
				continue
			}
			if bytes > 0 && bytes+len(batch) > budget {
				break
			}
			out.Records = append(out.Records, batch...)
			bytes += len(batch)
		}
	}
	return resp, bytes, failed
}

func (s *tabletService) ListOffsets(_ context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.bucketLocked(req.TableId, req.Bucket)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "%v", err)
	}
	if b.leader != s.node {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d leads", b.leader)
	}
	hw := b.highWatermark()
	switch req.Spec {
	case pb.OffsetSpec_OFFSET_SPEC_EARLIEST:
		return &pb.ListOffsetsResponse{Offset: 0, LeaderEpoch: b.epoch}, nil
	case pb.OffsetSpec_OFFSET_SPEC_TIMESTAMP:
		for _, batch := range b.batches {
			if batch.CommitTimestamp() >= req.TimestampMs && batch.BaseOffset() < hw {
				return &pb.ListOffsetsResponse{Offset: batch.BaseOffset(), LeaderEpoch: b.epoch}, nil
			}
		}
	}
	return &pb.ListOffsetsResponse{Offset: hw, LeaderEpoch: b.epoch}, nil
}
