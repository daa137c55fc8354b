package testcluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// waitTimeout bounds the waits of the inspection helpers.
const waitTimeout = 30 * time.Second

// ErrNotYet is what a condition of waitUntil returns while it does not hold
// yet; waitUntil reports the last one when it gives up.
var ErrNotYet = errors.New("testcluster: not yet")

// waitUntil polls cond until it returns nil, a final error (anything but
// one wrapping ErrNotYet or a retriable wire error), or ctx or waitTimeout
// ends.
func waitUntil(ctx context.Context, what string, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	bo := backoff.Backoff{Min: 2 * time.Millisecond, Max: 100 * time.Millisecond}
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrNotYet) && !retriable(err) {
			return fmt.Errorf("testcluster: waiting for %s: %w", what, err)
		}
		if !bo.Wait(ctx) {
			return fmt.Errorf("testcluster: waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		}
	}
}

// anyMeta runs fn against each node in turn until one answers.
func (c *Cluster) anyMeta(ctx context.Context, fn func(pb.DRPCMetaClient) error) error {
	var errs []error
	for _, nd := range c.nodes {
		err := fn(c.meta(nd.Addr()))
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// waitRegistered waits until the metadata leader lists every node as
// registered and alive.
func (c *Cluster) waitRegistered(ctx context.Context) error {
	return waitUntil(ctx, "every node to register", func(ctx context.Context) error {
		return c.anyMeta(ctx, func(m pb.DRPCMetaClient) error {
			st, err := m.ClusterStatus(ctx, &pb.ClusterStatusRequest{})
			if err != nil {
				return err
			}
			alive := 0
			for _, n := range st.Nodes {
				if n.Alive {
					alive++
				}
			}
			if alive != len(c.nodes) {
				return fmt.Errorf("%w: %d of %d nodes registered and alive", ErrNotYet, alive, len(c.nodes))
			}
			return nil
		})
	})
}

// TableSpec describes a table CreateTable makes.
type TableSpec struct {
	Database, Name string
	// Schema in the CLI syntax, with PRIMARY KEY (...) for a primary-key
	// table.
	Schema    string
	Buckets   int32
	BucketKey []string
	// Replication factor; 0: one replica.
	Replication int32
	// Properties are the table's properties.
	Properties map[string]string
}

// CreateTable creates the database (if needed) and the table, then waits
// until every bucket's leader serves it. It returns the table's id.
func (c *Cluster) CreateTable(ctx context.Context, spec TableSpec) (uint64, error) {
	var id uint64
	err := c.anyMeta(ctx, func(m pb.DRPCMetaClient) error {
		if _, err := m.CreateDatabase(ctx, &pb.CreateDatabaseRequest{Name: spec.Database, IfNotExists: true}); err != nil {
			return err
		}
		resp, err := m.CreateTable(ctx, &pb.CreateTableRequest{Database: spec.Database, Name: spec.Name,
			Schema: spec.Schema, Buckets: spec.Buckets, BucketKey: spec.BucketKey, Replication: max(spec.Replication, 1),
			Properties: spec.Properties})
		if err != nil {
			return err
		}
		id = resp.GetResult().GetTable().GetId()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("testcluster: create table %s.%s: %w", spec.Database, spec.Name, err)
	}
	return id, c.WaitServing(ctx, spec.Database, spec.Name)
}

// Table returns what the metadata says of a table: its record, buckets and
// the nodes.
func (c *Cluster) Table(ctx context.Context, database, name string) (*pb.GetTableResponse, error) {
	var resp *pb.GetTableResponse
	err := c.anyMeta(ctx, func(m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.GetTable(ctx, &pb.GetTableRequest{Database: database, Name: name})
		return err
	})
	return resp, err
}

// WaitServing waits until every bucket of a table has a leader that serves
// it, with every replica in the ISR.
func (c *Cluster) WaitServing(ctx context.Context, database, name string) error {
	return waitUntil(ctx, fmt.Sprintf("%s.%s to be served", database, name), func(ctx context.Context) error {
		tbl, err := c.Table(ctx, database, name)
		if err != nil {
			return err
		}
		for _, b := range tbl.Buckets {
			if len(b.Isr) != len(b.Replicas) {
				return fmt.Errorf("%w: bucket %d has ISR %v of replicas %v", ErrNotYet, b.Bucket, b.Isr, b.Replicas)
			}
			if _, err := c.highWatermark(ctx, tbl, b.Bucket); err != nil {
				return err
			}
		}
		return nil
	})
}

// Leader returns the node leading a bucket, 0 when none.
func (c *Cluster) Leader(ctx context.Context, database, name string, bucket int32) (uint32, error) {
	tbl, err := c.Table(ctx, database, name)
	if err != nil {
		return 0, err
	}
	b, err := bucketOf(tbl, bucket)
	if err != nil {
		return 0, err
	}
	return b.Leader, nil
}

// WaitLeader waits until the metadata names a leader of a bucket for which
// ok holds (ok(0): no leader), and returns it.
func (c *Cluster) WaitLeader(ctx context.Context, database, name string, bucket int32, ok func(leader uint32) bool) (uint32, error) {
	var leader uint32
	err := waitUntil(ctx, fmt.Sprintf("a leader of %s.%s bucket %d", database, name, bucket), func(ctx context.Context) error {
		var err error
		if leader, err = c.Leader(ctx, database, name, bucket); err != nil {
			return err
		}
		if !ok(leader) {
			return fmt.Errorf("%w: leader %d", ErrNotYet, leader)
		}
		return nil
	})
	return leader, err
}

func bucketOf(tbl *pb.GetTableResponse, bucket int32) (*pb.BucketRecord, error) {
	for _, b := range tbl.Buckets {
		if b.Bucket == bucket {
			return b, nil
		}
	}
	return nil, fmt.Errorf("testcluster: table %s.%s has no bucket %d", tbl.GetTable().GetDatabase(), tbl.GetTable().GetName(), bucket)
}

// leaderAddr is the address of a bucket's leader.
func leaderAddr(tbl *pb.GetTableResponse, bucket int32) (string, error) {
	b, err := bucketOf(tbl, bucket)
	if err != nil {
		return "", err
	}
	for _, n := range tbl.Nodes {
		if n.Id == b.Leader && b.Leader != 0 {
			return n.RpcAddress, nil
		}
	}
	return "", fmt.Errorf("%w: bucket %d has no known leader", ErrNotYet, bucket)
}

// fetch reads a bucket from its leader at offset, as a consumer would.
func (c *Cluster) fetch(ctx context.Context, tbl *pb.GetTableResponse, bucket int32, offset int64) (*pb.FetchedBucket, error) {
	addr, err := leaderAddr(tbl, bucket)
	if err != nil {
		return nil, err
	}
	resp, err := c.tablet(addr).Fetch(ctx, &pb.FetchRequest{
		Buckets:  []*pb.FetchBucket{{TableId: tbl.Table.Id, Bucket: bucket, Offset: offset, LeaderEpoch: -1}},
		MaxBytes: 16 << 20,
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Buckets) != 1 {
		return nil, fmt.Errorf("testcluster: fetch of one bucket answered %d", len(resp.Buckets))
	}
	fb := resp.Buckets[0]
	if fb.Error != "" {
		return nil, wireError(fb.ErrorCode, fb.Error)
	}
	return fb, nil
}

func (c *Cluster) highWatermark(ctx context.Context, tbl *pb.GetTableResponse, bucket int32) (int64, error) {
	fb, err := c.fetch(ctx, tbl, bucket, 0)
	if err != nil {
		return 0, err
	}
	return fb.HighWatermark, nil
}

// HighWatermark returns a bucket's high watermark as its leader reports it.
func (c *Cluster) HighWatermark(ctx context.Context, database, name string, bucket int32) (int64, error) {
	tbl, err := c.Table(ctx, database, name)
	if err != nil {
		return 0, err
	}
	return c.highWatermark(ctx, tbl, bucket)
}

// LocalLogStart returns the first offset a bucket's leader holds on its
// own disk (tiering deletes local segments below it once they are in
// remote storage).
func (c *Cluster) LocalLogStart(ctx context.Context, database, name string, bucket int32) (int64, error) {
	tbl, err := c.Table(ctx, database, name)
	if err != nil {
		return 0, err
	}
	hw, err := c.highWatermark(ctx, tbl, bucket)
	if err != nil {
		return 0, err
	}
	fb, err := c.fetch(ctx, tbl, bucket, hw)
	if err != nil {
		return 0, err
	}
	return fb.LogStartOffset, nil
}

// Record is one committed record of a bucket's log.
type Record struct {
	Offset int64
	Change record.ChangeType
	// Control marks a record of a control batch (no-op, barrier), whose
	// Row starts with a record.ControlKind.
	Control   bool
	Timestamp int64 // commit time, Unix milliseconds
	WriterID  int64
	Sequence  int32
	Row       []byte
}

// Records reads every committed record of a bucket from its leader, in
// offset order, checking each batch's CRC.
func (c *Cluster) Records(ctx context.Context, database, name string, bucket int32) ([]Record, error) {
	tbl, err := c.Table(ctx, database, name)
	if err != nil {
		return nil, err
	}
	codec, err := record.NewCodec(record.CodecConfig{})
	if err != nil {
		return nil, err
	}
	defer codec.Close()
	versions, err := replica.SchemaVersions(tbl.Table)
	if err != nil {
		return nil, err
	}
	rd := &batchReader{codec: codec, versions: versions, decoders: make(map[int16]*arrowlog.Decoder)}
	var out []Record
	var offset int64
	for {
		fb, err := c.fetch(ctx, tbl, bucket, offset)
		if err != nil {
			return nil, err
		}
		data := fb.Records
		for len(data) > 0 {
			batch, err := record.Check(data)
			if err != nil {
				return nil, fmt.Errorf("testcluster: bucket %d at offset %d: %w", bucket, offset, err)
			}
			data = data[batch.Size():]
			if out, err = rd.appendRecords(out, batch, fb.HighWatermark); err != nil {
				return nil, err
			}
			offset = batch.NextOffset()
		}
		if offset >= fb.HighWatermark || len(fb.Records) == 0 {
			return out, nil
		}
	}
}

// batchReader reads the records of a table's batches: rows, or Arrow
// payloads of its schema versions.
type batchReader struct {
	codec    *record.Codec
	versions []replica.SchemaVersion
	decoders map[int16]*arrowlog.Decoder
}

// appendRecords appends a batch's records below hw; an Arrow batch's rows
// are rows of the schema version it was written in.
func (rd *batchReader) appendRecords(out []Record, batch record.Batch, hw int64) ([]Record, error) {
	rec := func(offset int64, change record.ChangeType, row []byte) Record {
		return Record{Offset: offset, Change: change, Control: batch.PayloadFormat() == record.PayloadControl,
			Timestamp: batch.CommitTimestamp(), WriterID: batch.WriterID(), Sequence: batch.BatchSequence(),
			Row: append([]byte(nil), row...)}
	}
	if batch.PayloadFormat() == record.PayloadArrow {
		d, err := rd.decoder(batch.SchemaID())
		if err != nil {
			return nil, err
		}
		err = d.Rows(batch.Payload(), int(batch.RecordCount()), func(i int, row []byte) error {
			if off := batch.BaseOffset() + int64(i); off < hw {
				out = append(out, rec(off, record.AppendOnly, row))
			}
			return nil
		})
		return out, err
	}
	it, _, err := batch.Records(rd.codec, nil)
	if err != nil {
		return nil, err
	}
	for it.Next() {
		r := it.Record()
		if r.Offset >= hw {
			break
		}
		out = append(out, rec(r.Offset, r.Change, r.Data))
	}
	return out, it.Err()
}

// decoder returns the Arrow decoder of schema version id.
func (rd *batchReader) decoder(id int16) (*arrowlog.Decoder, error) {
	if d, ok := rd.decoders[id]; ok {
		return d, nil
	}
	for _, v := range rd.versions {
		if v.ID == int32(id) {
			d, err := arrowlog.NewDecoder(v.Schema)
			if err != nil {
				return nil, err
			}
			rd.decoders[id] = d
			return d, nil
		}
	}
	return nil, fmt.Errorf("testcluster: a batch of schema version %d, which the table does not have", id)
}

// retriable reports whether a wait should try again after err: a wire
// error the node marks retriable (no leader yet, unavailable).
func retriable(err error) bool { return transport.IsRetriable(err) }

// wireError is a per-bucket error of a fetch answer as an error.
func wireError(code pb.ErrorCode, message string) error {
	return transport.Errorf(code, "%s", message)
}

// names numbers the names NameFor hands out in this process.
var names atomic.Int64

// NameFor turns a test's name into a database or table name of letters,
// digits and underscores, unique in the process (a test run twice with
// -count gets a new one each time).
func NameFor(testName string) string {
	b := []byte(testName)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return fmt.Sprintf("%s_%d", b[:min(len(b), 180)], names.Add(1))
}
