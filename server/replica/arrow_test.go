package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// arrowSchema is the schema of the Arrow tests' table.
var arrowSchema = record.Schema{Columns: []record.Column{
	{Name: "id", Type: record.BigInt()},
	{Name: "page", Type: record.String(), Nullable: true},
	{Name: "ms", Type: record.Int(), Nullable: true},
}}

// openArrowReplica opens and leads the replica of a log table of
// arrowSchema on a manager with the given batch limit.
func openArrowReplica(t *testing.T, maxBatchBytes int) (*Manager, *Replica) {
	t.Helper()
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.MaxBatchBytes = maxBatchBytes })
	rec := &pb.TableRecord{Id: testBucket.TableID, Database: "db", Name: "clicks", Buckets: 1, Replication: 1,
		Schemas: []*pb.SchemaVersion{{Id: 1}}}
	for _, c := range arrowSchema.Columns {
		rec.Schemas[0].Columns = append(rec.Schemas[0].Columns, &pb.Column{Name: c.Name, Type: c.Type.String(), Nullable: c.Nullable})
	}
	info, err := newTableInfo(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := openReplica(m, testBucket, info)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	lead(r, 1)
	return m, r
}

// arrowBatch is an Arrow batch of rows ids from..to-1 of arrowSchema.
func arrowBatch(t *testing.T, from, to int, page string, opts arrowlog.Options) record.Batch {
	t.Helper()
	enc, err := arrowlog.NewEncoder(arrowSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	for id := from; id < to; id++ {
		row, err := record.AppendRowFromJSON(nil, arrowSchema, fmt.Appendf(nil, `{"id":%d,"page":%q,"ms":%d}`, id, page, id*10))
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	payload, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.BuildBatch(record.BatchOptions{SchemaID: 1, Format: record.PayloadArrow, Compression: opts.Compression,
		AppendOnly: true}, int32(to-from), payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceErr(m *Manager, b record.Batch) error {
	_, err := m.Produce(context.Background(), &pb.ProduceRequest{TableId: testBucket.TableID, Bucket: testBucket.Bucket,
		Acks: AcksLeader, Batch: b})
	return err
}

func wantCode(t *testing.T, what string, err error, code pb.ErrorCode, text string) {
	t.Helper()
	var te *transport.Error
	if !errors.As(err, &te) || te.Code != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("%s: %v; want %v mentioning %q", what, err, code, text)
	}
}

// TestProduceArrowChecked: a leader takes a valid Arrow batch and refuses,
// with the reason, one whose payload is damaged under a good CRC, whose
// header counts other records than its payload, that carries the
// projected bit, or that inflates past the batch limit; the log keeps
// only what it took.
func TestProduceArrowChecked(t *testing.T) {
	const limit = 64 << 10
	m, r := openArrowReplica(t, limit)
	if err := produceErr(m, arrowBatch(t, 0, 10, "/home", arrowlog.Options{Compression: record.CompressionZstd})); err != nil {
		t.Fatalf("a valid Arrow batch: %v", err)
	}

	damaged := arrowBatch(t, 10, 20, "/home", arrowlog.Options{})
	damaged[len(damaged)-9] ^= 0x80 // a byte of the last buffer (the ms values' padding or data)
	damaged[record.HeaderSize+8] ^= 0xff
	restamp(damaged)
	wantCode(t, "a damaged payload", produceErr(m, damaged), pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "")

	miscounted := arrowBatch(t, 10, 20, "/home", arrowlog.Options{})
	miscounted = withCount(t, miscounted, 11)
	wantCode(t, "a record count the payload does not have", produceErr(m, miscounted), pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "")

	projected, err := record.ProjectBatch(arrowBatch(t, 10, 20, "/home", arrowlog.Options{}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "a projected batch", produceErr(m, projected), pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "append-only row or Arrow batches")

	big := arrowBatch(t, 10, 2010, strings.Repeat("p", 200), arrowlog.Options{Compression: record.CompressionZstd})
	if len(big) >= limit {
		t.Fatalf("the compressed batch is %d bytes: the test needs it under the %d-byte limit", len(big), limit)
	}
	wantCode(t, "a batch inflating past the limit", produceErr(m, big), pb.ErrorCode_ERROR_CODE_TOO_LARGE, MaxBatchBytesFlag)

	if end := r.log.EndOffset(); end != 10 {
		t.Fatalf("log end %d after refusals, want 10", end)
	}
}

// restamp recomputes a batch's CRC after a change.
func restamp(b record.Batch) {
	crc := b.ComputeCRC()
	b[25], b[26], b[27], b[28] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

// withCount rebuilds b with another record count.
func withCount(t *testing.T, b record.Batch, n int32) record.Batch {
	t.Helper()
	out, err := record.BuildBatch(record.BatchOptions{SchemaID: b.SchemaID(), Format: record.PayloadArrow, Compression: b.Compression(),
		AppendOnly: true}, n, b.Payload(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFetchProjectsArrow: a consumer's fetch with columns gets each Arrow
// batch cut to them, in its order, the same records as a whole read; a
// bad projection is refused.
func TestFetchProjectsArrow(t *testing.T) {
	m, r := openArrowReplica(t, 0)
	for i := range 5 {
		opts := arrowlog.Options{} // the last batch's buffers compressed: cut as they are
		if i == 4 {
			opts.Compression = record.CompressionLZ4
		}
		produceLeader(t, r, arrowBatch(t, i*100, i*100+100, strings.Repeat("x", 100), opts))
	}
	waitHW(t, r, 500)
	fetch := func(columns ...int32) *pb.FetchedBucket {
		t.Helper()
		resp, err := m.Fetch(context.Background(), &pb.FetchRequest{Buckets: []*pb.FetchBucket{{TableId: testBucket.TableID,
			Bucket: testBucket.Bucket, LeaderEpoch: -1, LastFetchedEpoch: -1, Columns: columns}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Buckets[0]
	}
	whole, cut := fetch(), fetch(2, 0)
	if whole.Error != "" || cut.Error != "" {
		t.Fatalf("fetch errors: %q, %q", whole.Error, cut.Error)
	}
	if len(cut.Records)*4 > len(whole.Records) {
		t.Fatalf("2 small columns of 3 took %d bytes, the whole batches %d", len(cut.Records), len(whole.Records))
	}
	sub := arrowlog.SubSchema(arrowSchema, []int{2, 0})
	dec, err := arrowlog.NewDecoder(sub)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	it := record.NewBatchIterator(cut.Records, true)
	for it.Next() {
		b := it.Batch()
		if !b.Projected() || b.BaseOffset() != next {
			t.Fatalf("batch at %d: projected %v, want projected at %d", b.BaseOffset(), b.Projected(), next)
		}
		err := dec.Rows(b.Payload(), int(b.RecordCount()), func(i int, row []byte) error {
			v := record.NewRowView(sub, row)
			if id := b.BaseOffset() + int64(i); v.Int64(1) != id || v.Int64(0) != id*10 {
				return fmt.Errorf("record %d: ms %d, id %d", id, v.Int64(0), v.Int64(1))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		next = b.NextOffset()
	}
	if it.Err() != nil || next != 500 {
		t.Fatalf("projected records end at %d (%v), want 500", next, it.Err())
	}
	for _, bad := range [][]int32{{1, 1}, {-1}, {record.MaxColumns}} {
		if fb := fetch(bad...); fb.ErrorCode != pb.ErrorCode_ERROR_CODE_INVALID_REQUEST {
			t.Fatalf("columns %v: %v %q, want INVALID_REQUEST", bad, fb.ErrorCode, fb.Error)
		}
	}
}
