package replica

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

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
