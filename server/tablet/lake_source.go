package tablet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// lakeFetchBytes is what one fetch of a lake round asks a leader for.
const lakeFetchBytes = 4 << 20

// lakeBucket names a bucket by the id it is keyed by.
type lakeBucket struct {
	physical uint64
	bucket   int32
}

// fetchSource reads a lake round's buckets from their leaders, as a
// consumer reads them (up to the high watermark; below the leader's local
// log the leader reads the remote log for it).
type fetchSource struct {
	r       *Role
	addrs   map[uint32]string
	leaders map[lakeBucket]uint32
	schemas map[int32]record.Schema
	// primaryKey: the table's changelog (+I, -U, +U, -D), not a log's.
	primaryKey bool
	codec      *record.Codec
	decs       map[int32]*arrowlog.Decoder
	readers    map[int32]*arrowlog.BatchReader
	scratch    []byte
}

var _ lake.BucketScanner = (*fetchSource)(nil)

// ReadBucket implements lake.Source.
func (s *fetchSource) ReadBucket(ctx context.Context, b lake.BucketRef, from int64, maxRecords int, fn func(lake.Record) error) (int64, error) {
	leader := s.leaders[lakeBucket{b.PhysicalID, b.Bucket}]
	addr := s.addrs[leader]
	if leader == 0 || addr == "" {
		return from, transport.Errorf(pb.ErrorCode_ERROR_CODE_BUCKET_OFFLINE, "bucket %d of %d has no leader to read from", b.Bucket, b.PhysicalID)
	}
	fetch := pb.NewDRPCTabletClient(s.r.deps.Pool.Conn(addr)).Fetch
	if leader == s.r.cfg.NodeID && s.r.replicas != nil {
		// The bucket's leader is here (the controller puts a task where
		// its buckets are led): read its log without the network.
		fetch = s.r.replicas.Fetch
	}
	next, read := from, 0
	for read < maxRecords {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := fetch(fctx, &pb.FetchRequest{MaxBytes: lakeFetchBytes, Buckets: []*pb.FetchBucket{{
			TableId: b.PhysicalID, Bucket: b.Bucket, Offset: next, LeaderEpoch: -1, LastFetchedEpoch: -1}}})
		cancel()
		if err != nil {
			return from, err
		}
		if len(resp.GetBuckets()) != 1 {
			return from, fmt.Errorf("a fetch of one bucket answered with %d", len(resp.GetBuckets()))
		}
		fb := resp.GetBuckets()[0]
		if fb.GetErrorCode() != pb.ErrorCode_ERROR_CODE_INTERNAL || fb.GetError() != "" {
			return from, transport.Errorf(fb.GetErrorCode(), "%s", fb.GetError())
		}
		data := fb.GetRecords()
		if len(data) == 0 {
			return next, nil // at the high watermark
		}
		before := next
		for len(data) > 0 && read < maxRecords {
			batch, err := record.Check(data)
			if err != nil {
				return from, err
			}
			data = data[batch.Size():]
			if batch.NextOffset() <= next {
				continue
			}
			if err := s.records(batch, next, maxRecords-read, func(rec lake.Record) error {
				n := 1
				if rec.Batch != nil {
					n = int(rec.Batch.NumRows())
				}
				read += n
				next = rec.Offset + int64(n)
				return fn(rec)
			}); errors.Is(err, lake.ErrRoundFull) {
				return next, nil
			} else if err != nil {
				return from, err
			}
			if batch.NextOffset() > next && read < maxRecords {
				next = batch.NextOffset() // records without a row (control batches)
			}
		}
		if next == before {
			return next, nil
		}
	}
	return next, nil
}

// ScanBucket implements lake.BucketScanner: the rows of a primary-key
// bucket's leader's store, page by page (ScanRows), for a round that
// rebuilds the bucket's lake after an unclean election. A leadership
// change between pages fails the scan: the next round scans again.
func (s *fetchSource) ScanBucket(ctx context.Context, b lake.BucketRef, fn func(int32, []byte) error) (first, last int64, err error) {
	leader := s.leaders[lakeBucket{b.PhysicalID, b.Bucket}]
	addr := s.addrs[leader]
	if leader == 0 || addr == "" {
		return 0, 0, transport.Errorf(pb.ErrorCode_ERROR_CODE_BUCKET_OFFLINE, "bucket %d of %d has no leader to scan", b.Bucket, b.PhysicalID)
	}
	scan := pb.NewDRPCTabletClient(s.r.deps.Pool.Conn(addr)).ScanRows
	if leader == s.r.cfg.NodeID && s.r.replicas != nil {
		scan = s.r.replicas.ScanRows
	}
	var after []byte
	epoch := int32(-1)
	first, last = -1, -1
	for {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := scan(sctx, &pb.ScanRowsRequest{TableId: b.PhysicalID, Bucket: b.Bucket, AfterKey: after})
		cancel()
		if err != nil {
			return 0, 0, err
		}
		switch {
		case epoch >= 0 && resp.GetLeaderEpoch() != epoch:
			return 0, 0, fmt.Errorf("bucket %d of %d: its leader epoch went from %d to %d during the scan", b.Bucket, b.PhysicalID, epoch, resp.GetLeaderEpoch())
		case resp.GetAppliedOffset() < last:
			return 0, 0, fmt.Errorf("bucket %d of %d: a page's view at %d after one at %d", b.Bucket, b.PhysicalID, resp.GetAppliedOffset(), last)
		}
		epoch, last = resp.GetLeaderEpoch(), resp.GetAppliedOffset()
		if first < 0 {
			first = last
		}
		rows := resp.GetRows()
		for _, n := range resp.GetRowSizes() {
			if int(n) > len(rows) {
				return 0, 0, fmt.Errorf("bucket %d of %d: a page's rows end before its row sizes do", b.Bucket, b.PhysicalID)
			}
			if err := fn(resp.GetSchemaId(), rows[:n]); err != nil {
				return 0, 0, err
			}
			rows = rows[n:]
		}
		if resp.GetDone() {
			return first, last, nil
		}
		if len(resp.GetNextKey()) == 0 {
			return 0, 0, fmt.Errorf("bucket %d of %d: a page neither done nor naming the next", b.Bucket, b.PhysicalID)
		}
		after = append(after[:0], resp.GetNextKey()...)
	}
}

// records calls fn with the records of batch at or past from, at most
// limit of them.
func (s *fetchSource) records(b record.Batch, from int64, limit int, fn func(lake.Record) error) error {
	id := int32(b.SchemaID())
	if _, ok := s.schemas[id]; !ok {
		return fmt.Errorf("a batch of schema version %d, which the table does not have (yet)", id)
	}
	ts := b.CommitTimestamp()
	n := 0
	emit := func(offset int64, change record.ChangeType, row []byte) error {
		if offset < from || n >= limit {
			return nil
		}
		n++
		return fn(lake.Record{Offset: offset, TimestampMs: ts, SchemaID: id, Row: row, Change: change})
	}
	if b.PayloadFormat() == record.PayloadArrow && !b.Projected() && b.BaseOffset() >= from && int(b.RecordCount()) <= limit {
		// The whole batch: its columns as they are.
		rd, err := s.batchReader(id)
		if err != nil {
			return err
		}
		rec, err := rd.Read(b.Payload(), int(b.RecordCount()))
		if err != nil {
			return err
		}
		defer rec.Release()
		return fn(lake.Record{Offset: b.BaseOffset(), TimestampMs: ts, SchemaID: id, Batch: rec})
	}
	if b.PayloadFormat() == record.PayloadArrow {
		dec, err := s.decoder(id)
		if err != nil {
			return err
		}
		base := b.BaseOffset()
		return dec.Rows(b.Payload(), int(b.RecordCount()), func(i int, row []byte) error { return emit(base+int64(i), record.AppendOnly, row) })
	}
	if s.codec == nil {
		var err error
		if s.codec, err = record.NewCodec(record.CodecConfig{}); err != nil {
			return err
		}
	}
	recs, scratch, err := b.Records(s.codec, s.scratch)
	s.scratch = scratch
	if err != nil {
		return err
	}
	for recs.Next() {
		r := recs.Record()
		if !s.primaryKey && r.Change != record.AppendOnly && r.Change != record.Insert {
			return fmt.Errorf("a %v record in a log table's batch", r.Change)
		}
		if err := emit(r.Offset, r.Change, r.Data); err != nil {
			return err
		}
	}
	return recs.Err()
}

func (s *fetchSource) batchReader(id int32) (*arrowlog.BatchReader, error) {
	if r := s.readers[id]; r != nil {
		return r, nil
	}
	r, err := arrowlog.NewBatchReader(s.schemas[id])
	if err != nil {
		return nil, err
	}
	if s.readers == nil {
		s.readers = map[int32]*arrowlog.BatchReader{}
	}
	s.readers[id] = r
	return r, nil
}

func (s *fetchSource) decoder(id int32) (*arrowlog.Decoder, error) {
	if d := s.decs[id]; d != nil {
		return d, nil
	}
	d, err := arrowlog.NewDecoder(s.schemas[id])
	if err != nil {
		return nil, err
	}
	if s.decs == nil {
		s.decs = map[int32]*arrowlog.Decoder{}
	}
	s.decs[id] = d
	return d, nil
}

// lakePartitionValues types a partition's values (canonical text) as the
// lake's partition spec has them: the source columns' Iceberg types.
func lakePartitionValues(s record.Schema, keys, values []string) ([]lake.PartitionValue, error) {
	if len(keys) != len(values) {
		return nil, fmt.Errorf("a partition of %d values for %d keys", len(values), len(keys))
	}
	out := make([]lake.PartitionValue, len(keys))
	for i, k := range keys {
		c, ok := s.ColumnIndex(k)
		if !ok {
			return nil, fmt.Errorf("partition column %s is not in the schema", k)
		}
		switch s.Columns[c].Type.Kind() {
		case record.KindString:
			out[i] = lake.PartitionValue{Type: "string", Value: values[i]}
		case record.KindTinyInt, record.KindSmallInt, record.KindInt:
			n, err := strconv.ParseInt(values[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("partition value %s=%q: %w", k, values[i], err)
			}
			out[i] = lake.PartitionValue{Type: "int", Value: int32(n)}
		case record.KindBigInt:
			n, err := strconv.ParseInt(values[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("partition value %s=%q: %w", k, values[i], err)
			}
			out[i] = lake.PartitionValue{Type: "long", Value: n}
		case record.KindDate:
			d, err := time.Parse(time.DateOnly, values[i])
			if err != nil {
				return nil, fmt.Errorf("partition value %s=%q: %w", k, values[i], err)
			}
			out[i] = lake.PartitionValue{Type: "date", Value: int32(d.Unix() / 86400)}
		default:
			return nil, fmt.Errorf("partition column %s of type %v", k, s.Columns[c].Type)
		}
	}
	return out, nil
}
