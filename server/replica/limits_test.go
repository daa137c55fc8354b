package replica

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// A compressed batch is held to --max-batch-bytes at the size it inflates
// to: a small request must not make the leader decompress (and hold) more
// than an uncompressed batch could carry.
func TestProduceRefusesBatchInflatingPastLimit(t *testing.T) {
	const limit = 64 << 10
	m := newTestManager(t, t.TempDir(), func(c *Config) { c.MaxBatchBytes = limit })
	r := openTestReplica(t, m)
	m.mu.Lock()
	m.replicas[testBucket] = r
	m.mu.Unlock()
	lead(r, 1)

	codec, err := record.NewCodec(record.CodecConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer codec.Close()
	b := record.NewBatchBuilder(record.BatchOptions{SchemaID: 1, AppendOnly: true, Compression: record.CompressionZstd, Codec: codec}, 0)
	for range 64 {
		b.Append(record.AppendOnly, bytes.Repeat([]byte("a"), 4<<10)) // 256 KiB in all
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) >= limit {
		t.Fatalf("the compressed batch is %d bytes: the test needs it under the %d-byte limit", len(batch), limit)
	}
	_, err = m.Produce(context.Background(), &pb.ProduceRequest{TableId: testBucket.TableID, Bucket: testBucket.Bucket,
		Acks: AcksLeader, Batch: batch})
	var te *transport.Error
	if !errors.As(err, &te) || te.Code != pb.ErrorCode_ERROR_CODE_TOO_LARGE ||
		!strings.Contains(err.Error(), MaxBatchBytesFlag) || !strings.Contains(err.Error(), "65536-byte") {
		t.Fatalf("produce of a %d-byte batch inflating to 256 KiB: %v; want TOO_LARGE naming the 65536-byte limit and %s", len(batch), err, MaxBatchBytesFlag)
	}
}

// A fetch naming many buckets gets an answer no larger than its byte limit:
// the buckets past it are left out (their callers ask again), as Kafka's
// fetch.max.bytes, instead of one error entry each in an answer no client
// can receive.
func TestFetchAnswerBoundedAcrossBuckets(t *testing.T) {
	m := newTestManager(t, t.TempDir())
	const maxBytes = 64 << 10
	req := &pb.FetchRequest{MaxBytes: maxBytes}
	for i := range 10000 {
		req.Buckets = append(req.Buckets, &pb.FetchBucket{TableId: 1000 + uint64(i), Offset: 0, LeaderEpoch: -1, LastFetchedEpoch: -1})
	}
	resp, err := m.Fetch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if size := proto.Size(resp); size > maxBytes || len(resp.Buckets) == 0 || len(resp.Buckets) == len(req.Buckets) {
		t.Fatalf("fetch of %d buckets with max_bytes %d: %d buckets in %d bytes; want some, within the limit",
			len(req.Buckets), maxBytes, len(resp.Buckets), size)
	}
	for i, fb := range resp.Buckets {
		if fb.TableId != req.Buckets[i].TableId || fb.ErrorCode != pb.ErrorCode_ERROR_CODE_NOT_LEADER {
			t.Fatalf("answer %d: table %d, %v; want table %d, not leader", i, fb.TableId, fb.ErrorCode, req.Buckets[i].TableId)
		}
	}
}

// A consumer's fetch whose max_bytes is below the room an answer keeps
// for one more bucket still gets its first bucket's batches: the first
// bucket is always served. Before, its budget came out negative and a
// scanner with 1 KiB fetches read nothing for ever.
func TestSmallFetchServesTheFirstBucket(t *testing.T) {
	m, r := managedReplica(t, noMeta{})
	r.assign(&pb.BucketRecord{TableId: testBucket.TableID, Bucket: testBucket.Bucket, Leader: 1, LeaderEpoch: 1,
		BucketEpoch: 1, Replicas: []uint32{1}, Isr: []uint32{1}}, 1)
	produceLeader(t, r, writerBatchN(t, 100, 0, 3, "small"))
	resp, err := m.Fetch(t.Context(), &pb.FetchRequest{MaxBytes: 1 << 10, Buckets: []*pb.FetchBucket{{
		TableId: testBucket.TableID, Bucket: testBucket.Bucket, Offset: 0, MaxBytes: 1 << 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if fb := resp.Buckets[0]; fb.Error != "" || len(fb.Records) == 0 {
		t.Fatalf("1 KiB fetch: %q, %d record bytes; want the first batch", fb.Error, len(fb.Records))
	}
}
