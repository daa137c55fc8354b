package clienttest

import (
	"bytes"
	"context"
	"slices"
	"sort"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// defaultPrefixLimit is PrefixLookup's limit when the request sets none.
const defaultPrefixLimit = 1000

// kvChange is one record of a PutKv batch.
type kvChange struct {
	change record.ChangeType
	row    []byte
}

// PutKv applies upserts and deletes to a bucket's rows, last row wins, and
// appends the changelog they make (+I, -U and +U, -D), or a control no-op
// batch when they change nothing, with the request's writer and sequence:
// a repeated sequence is answered with the first answer.
func (s *tabletService) PutKv(ctx context.Context, req *pb.PutKvRequest) (*pb.ProduceResponse, error) {
	c := s.c
	if err := c.passProduceGate(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.produces++
	t, b, err := s.leaderBucketLocked(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	f, err := c.takeFaultLocked(bucketRef{req.TableId, req.Bucket})
	if err != nil {
		return nil, err
	}
	if t.keys == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "table %d has no primary key", req.TableId)
	}
	batch, changes, err := checkKVBatch(t, c.codec, req)
	if err != nil {
		return nil, err
	}
	if dup, err := b.checkSequence(batch.WriterID(), batch.BatchSequence()); dup != nil || err != nil {
		return dup, err
	}
	changelog, err := applyKV(t, b, req, changes)
	if err != nil {
		return nil, err
	}
	built, err := buildChangelog(t, batch, changelog)
	if err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INTERNAL, "changelog: %v", err)
	}
	resp := c.appendStampedLocked(b, built)
	if f != nil {
		return nil, transport.Errorf(f.code, "injected after append")
	}
	return resp, nil
}

// leaderBucketLocked returns a table and its bucket led by this node.
func (s *tabletService) leaderBucketLocked(tableID uint64, bucket int32) (*table, *bucketLog, error) {
	t := s.c.byID[tableID]
	if t == nil {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_TABLE, "table %d", tableID)
	}
	if bucket < 0 || int(bucket) >= len(t.buckets) {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "no bucket %d", bucket)
	}
	b := t.buckets[bucket]
	if b.leader != s.node {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node %d leads bucket %d", b.leader, bucket)
	}
	return t, b, nil
}

// checkKVBatch checks a PutKv batch as a leader would and returns its
// records.
func checkKVBatch(t *table, codec *record.Codec, req *pb.PutKvRequest) (record.Batch, []kvChange, error) {
	invalid := func(format string, args ...any) (record.Batch, []kvChange, error) {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, format, args...)
	}
	batch, err := record.Check(req.Batch)
	if err != nil || len(batch) != len(req.Batch) {
		return invalid("batch: %v", err)
	}
	if batch.AppendOnly() || batch.PayloadFormat() != record.PayloadRows ||
		int32(batch.SchemaID()) != t.rec.Schemas[len(t.rec.Schemas)-1].Id {
		return invalid("batch attributes %#x, schema %d", batch.Attributes(), batch.SchemaID())
	}
	targets, err := targetSet(t, req.TargetColumns)
	if err != nil {
		return nil, nil, err
	}
	upsert := t.schema
	if targets != nil {
		upsert = t.keys.relaxed(func(i int) bool { return !targets[i] })
	}
	del := t.keys.relaxed(func(i int) bool { return !t.keys.isKey[i] })
	it, _, err := batch.Records(codec, nil)
	if err != nil {
		return invalid("%v", err)
	}
	var changes []kvChange
	for it.Next() {
		r := it.Record()
		var s record.Schema
		switch r.Change {
		case record.UpdateAfter:
			s = upsert
		case record.Delete:
			s = del
		default:
			return invalid("change type %v in a PutKv batch", r.Change)
		}
		if err := record.ValidateRow(s, r.Data); err != nil {
			return invalid("%v", err)
		}
		bk, err := t.keys.bucket.AppendKey(nil, r.Data)
		if err != nil {
			return invalid("%v", err)
		}
		if got := bucketOf(bk, len(t.buckets)); got != req.Bucket {
			return invalid("row of bucket %d sent to bucket %d", got, req.Bucket)
		}
		changes = append(changes, kvChange{r.Change, slices.Clone(r.Data)})
	}
	if err := it.Err(); err != nil {
		return invalid("%v", err)
	}
	return batch, changes, nil
}

// targetSet reads target columns: nil for whole rows.
func targetSet(t *table, cols []int32) ([]bool, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	set := slices.Clone(t.keys.isKey)
	for _, c := range cols {
		if c < 0 || int(c) >= len(set) {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "target column %d", c)
		}
		set[c] = true
	}
	return set, nil
}

// applyKV applies the changes to the bucket's rows, all or none, and
// returns the changelog records.
func applyKV(t *table, b *bucketLog, req *pb.PutKvRequest, changes []kvChange) ([]kvChange, error) {
	targets, _ := targetSet(t, req.TargetColumns)
	loose := t.schema
	if targets != nil {
		loose = t.keys.relaxed(func(i int) bool { return !targets[i] })
	}
	staged := make(map[string][]byte) // nil: deleted
	get := func(key string) []byte {
		if row, ok := staged[key]; ok {
			return row
		}
		return b.rows[key]
	}
	var out []kvChange
	for _, ch := range changes {
		k, err := t.keys.primary.AppendKey(nil, ch.row)
		if err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "%v", err)
		}
		key := string(k)
		old := get(key)
		if ch.change == record.Delete {
			if old != nil {
				out = append(out, kvChange{record.Delete, old})
				staged[key] = nil
			}
			continue
		}
		row := ch.row
		if targets != nil {
			if row, err = t.keys.merge(old, ch.row, loose, targets); err != nil {
				return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "partial update: %v", err)
			}
		}
		switch {
		case old == nil:
			out = append(out, kvChange{record.Insert, row})
		case bytes.Equal(old, row):
			continue
		default:
			out = append(out, kvChange{record.UpdateBefore, old}, kvChange{record.UpdateAfter, row})
		}
		staged[key] = row
	}
	for key, row := range staged {
		if row == nil {
			delete(b.rows, key)
		} else {
			b.rows[key] = row
		}
	}
	return out, nil
}

// buildChangelog makes the changelog batch of a PutKv batch: its records,
// or a control no-op record when there are none, with the writer and
// sequence of the request's batch.
func buildChangelog(t *table, in record.Batch, changelog []kvChange) (record.Batch, error) {
	opts := record.BatchOptions{SchemaID: in.SchemaID(), Format: record.PayloadRows,
		HasWriter: in.WriterID() >= 0, WriterID: in.WriterID(), Sequence: in.BatchSequence()}
	if len(changelog) == 0 {
		opts.Format = record.PayloadControl
		changelog = []kvChange{{record.AppendOnly, []byte{byte(record.ControlNoop)}}}
	}
	bb := record.NewBatchBuilder(opts, 0)
	for _, ch := range changelog {
		if err := bb.Append(ch.change, ch.row); err != nil {
			return nil, err
		}
	}
	out, err := bb.Build()
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// Lookup answers the rows of keys; with linearizable, it first appends a
// control barrier batch to the bucket's log.
func (s *tabletService) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error) {
	c := s.c
	if err := c.passLookupGate(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, b, err := s.kvBucketLocked(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	resp := &pb.LookupResponse{LeaderEpoch: b.epoch}
	for _, key := range req.Keys {
		if err := t.keys.checkKey(key, t.keys.keySchema, t.keys.bucketOfPrimary, req.Bucket, len(t.buckets)); err != nil {
			return nil, err
		}
		row := b.rows[string(key)]
		resp.Rows = append(resp.Rows, row...)
		resp.RowSizes = append(resp.RowSizes, uint32(len(row)))
	}
	if req.Linearizable {
		c.appendBarrierLocked(t, b)
	}
	return resp, nil
}

// PrefixLookup answers the rows whose bucket key is the prefix, in primary
// key byte order.
func (s *tabletService) PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	c := s.c
	if err := c.passLookupGate(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, b, err := s.kvBucketLocked(req.TableId, req.Bucket)
	if err != nil {
		return nil, err
	}
	if !t.keys.prefix {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "bucket key is not a strict prefix of the primary key")
	}
	identity := func(bk []byte) ([]byte, error) { return bk, nil }
	if err := t.keys.checkKey(req.Prefix, t.keys.bucketKey, identity, req.Bucket, len(t.buckets)); err != nil {
		return nil, err
	}
	var keys []string
	for key, row := range b.rows {
		bk, err := t.keys.bucket.AppendKey(nil, row)
		if err == nil && bytes.Equal(bk, req.Prefix) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	limit := int(req.Limit)
	if limit <= 0 {
		limit = defaultPrefixLimit
	}
	resp := &pb.PrefixLookupResponse{LeaderEpoch: b.epoch}
	if len(keys) > limit {
		keys, resp.Truncated = keys[:limit], true
	}
	for _, key := range keys {
		resp.Rows = append(resp.Rows, slices.Clone(b.rows[key]))
	}
	if req.Linearizable {
		c.appendBarrierLocked(t, b)
	}
	return resp, nil
}

// kvBucketLocked is leaderBucketLocked for lookups: a primary-key table,
// and any injected lookup fault.
func (s *tabletService) kvBucketLocked(tableID uint64, bucket int32) (*table, *bucketLog, error) {
	t, b, err := s.leaderBucketLocked(tableID, bucket)
	if err != nil {
		return nil, nil, err
	}
	ref := bucketRef{tableID, bucket}
	if q := s.c.lookupFault[ref]; len(q) > 0 {
		s.c.lookupFault[ref] = q[1:]
		return nil, nil, transport.Errorf(q[0], "injected")
	}
	if t.keys == nil {
		return nil, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "table %d has no primary key", tableID)
	}
	return t, b, nil
}

// checkKey checks a key row of schema s whose bucket key (by toBucketKey)
// must fall in bucket.
func (k *kvKeys) checkKey(key []byte, s record.Schema, toBucketKey func([]byte) ([]byte, error), bucket int32, buckets int) error {
	if err := record.ValidateRow(s, key); err != nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "key: %v", err)
	}
	bk, err := toBucketKey(key)
	if err != nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "key: %v", err)
	}
	if got := bucketOf(bk, buckets); got != bucket {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "key of bucket %d sent to bucket %d", got, bucket)
	}
	return nil
}

// bucketOfPrimary returns the bucket key of a primary key row.
func (k *kvKeys) bucketOfPrimary(key []byte) ([]byte, error) {
	return k.keyBucket.AppendKey(nil, key)
}

// appendBarrierLocked appends a control barrier batch, as a leader does
// for a linearizable read.
func (c *Cluster) appendBarrierLocked(t *table, b *bucketLog) {
	bb := record.NewBatchBuilder(record.BatchOptions{SchemaID: int16(t.rec.Schemas[len(t.rec.Schemas)-1].Id),
		Format: record.PayloadControl}, 0)
	_ = bb.Append(record.AppendOnly, []byte{byte(record.ControlBarrier)})
	batch, _ := bb.Build()
	c.appendStampedLocked(b, slices.Clone(batch))
}
