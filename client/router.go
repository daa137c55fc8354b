package client

import (
	"hash"
	"sync"

	"github.com/spaolacci/murmur3"

	"github.com/floedb/floe/storage/record"
)

// router picks the bucket of each appended row.
type router interface {
	// route returns the bucket of a valid row whose record takes
	// recordBytes in a batch.
	route(row []byte, recordBytes int) (int32, error)
}

// keyRouter sends a row to BucketOfKey of its bucket-key bytes, so rows with
// equal bucket keys share a bucket and stay in order.
type keyRouter struct {
	key     *record.KeyEncoder
	buckets int32

	mu      sync.Mutex
	scratch []byte
	hash    hash.Hash32
}

func (r *keyRouter) route(row []byte, _ int) (int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key, err := r.key.AppendKey(r.scratch[:0], row)
	if err != nil {
		return 0, err
	}
	r.scratch = key
	if r.hash == nil {
		r.hash = murmur3.New32()
	}
	return bucketOfKey(r.hash, key, r.buckets), nil
}

// stickyRouter serves tables without a bucket key: it sends rows to one
// bucket until they fill a batch, then moves to the next bucket, round
// robin. Batches stay large under any load, and over time every bucket gets
// its share.
type stickyRouter struct {
	buckets int32
	// payloadBytes is the record bytes of a full batch: the batch size
	// limit less the header.
	payloadBytes int

	mu      sync.Mutex
	current int32
	filled  int // record bytes sent to current since it became current
}

// newStickyRouter returns a router that starts at bucket start and moves on
// after batchBytes worth of records.
func newStickyRouter(buckets, start int32, batchBytes int) *stickyRouter {
	return &stickyRouter{buckets: buckets, current: start % buckets,
		payloadBytes: max(batchBytes-record.HeaderSize, 1)}
}

func (r *stickyRouter) route(_ []byte, recordBytes int) (int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.filled > 0 && r.filled+recordBytes > r.payloadBytes {
		r.current = (r.current + 1) % r.buckets
		r.filled = 0
	}
	r.filled += recordBytes
	return r.current, nil
}
