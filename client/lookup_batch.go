package client

import (
	"context"
	"fmt"

	"github.com/floedb/floe/internal/fanout"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// lookupBatchParallelism bounds the requests one LookupBatch has in flight.
const lookupBatchParallelism = 16

// LookupBatch returns the rows of keys, in order: nil for a key the table
// does not have. The keys are split by bucket into requests of at most
// MaxBatchKeys keys, sent concurrently. An invalid key is refused with its
// index and record.ValidateRow's error, before anything is sent; any failed
// request fails the call.
func (l *Lookuper) LookupBatch(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if l.isClosed() {
		return nil, ErrLookuperClosed
	}
	for i, key := range keys {
		if err := record.ValidateRow(l.keys.keySchema, key); err != nil {
			return nil, pkgerr.Errorf("client", "lookup batch: key %d: %w", i, err)
		}
	}
	if l.parts != nil {
		return l.lookupBatchPartitioned(ctx, keys)
	}
	byBucket := make(map[int32][]int)
	for i, key := range keys {
		b := l.bucketOfKey(key)
		byBucket[b] = append(byBucket[b], i)
	}
	type chunk struct {
		bucket  int32
		indexes []int
	}
	var chunks []chunk
	for b, indexes := range byBucket {
		for len(indexes) > 0 {
			n := min(len(indexes), l.opts.MaxBatchKeys)
			chunks = append(chunks, chunk{b, indexes[:n]})
			indexes = indexes[n:]
		}
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	out := make([][]byte, len(keys))
	err := fanout.FirstError(ctx, chunks, lookupBatchParallelism, func(ctx context.Context, c chunk) error {
		req := make([][]byte, len(c.indexes))
		for j, i := range c.indexes {
			req[j] = keys[i]
		}
		rows, err := l.lookupKeys(ctx, c.bucket, req)
		if err != nil {
			return err
		}
		for j, i := range c.indexes {
			out[i] = rows[j]
		}
		return nil
	})
	switch {
	case err != nil && ctx.Err() != nil: // the call's time ran out
		return nil, pkgerr.Errorf("client", "lookup batch: %w", err)
	case err != nil:
		return nil, err
	}
	return out, nil
}

// PrefixLookup returns every row whose bucket key is bucketKey, a row of
// the table's bucket-key schema (Table.BucketKeySchema), in primary-key
// byte order. It serves tables whose bucket key is the first columns of
// the primary key and not all of them; others get ErrNoPrefixLookup. When
// more rows match than the server returns at once, the rows it returned
// come with an error matching ErrPrefixTruncated.
func (l *Lookuper) PrefixLookup(ctx context.Context, bucketKey []byte) ([][]byte, error) {
	if !l.keys.prefix {
		return nil, fmt.Errorf("%w: %s.%s", ErrNoPrefixLookup, l.t.info.Database, l.t.info.Name)
	}
	if err := record.ValidateRow(l.keys.bucketKeys, bucketKey); err != nil {
		return nil, err
	}
	return l.prefixLookupValid(ctx, bucketKey)
}

// PrefixLookupJSON is PrefixLookup of a bucket key given as a JSON object
// with the bucket-key columns, and no other.
func (l *Lookuper) PrefixLookupJSON(ctx context.Context, object []byte) ([][]byte, error) {
	if !l.keys.prefix {
		return nil, fmt.Errorf("%w: %s.%s", ErrNoPrefixLookup, l.t.info.Database, l.t.info.Name)
	}
	js := l.prefixJSON.Get().(*jsonScratch)
	bk, err := js.codec.AppendRow(nil, object)
	l.prefixJSON.Put(js)
	if err != nil {
		return nil, err
	}
	return l.prefixLookupValid(ctx, bk)
}

func (l *Lookuper) prefixLookupValid(ctx context.Context, bucketKey []byte) ([][]byte, error) {
	if l.isClosed() {
		return nil, ErrLookuperClosed
	}
	if l.parts != nil {
		return nil, pkgerr.Errorf("client", "prefix lookup: %s is partitioned and a bucket key does not name a partition: "+
			"look up in one partition's handle (Table.Partition)", l.t.qualifiedName())
	}
	h := l.hashers.Get().(*keyHasher)
	bucket := bucketOfKey(h.hash, bucketKey, l.t.info.Buckets)
	l.hashers.Put(h)
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	req := &pb.PrefixLookupRequest{TableId: l.t.info.ID, Bucket: bucket, Prefix: bucketKey, Linearizable: l.opts.Linearizable}
	var resp *pb.PrefixLookupResponse
	err := l.t.callLeader(ctx, bucket, l.opts.RequestTimeout, l.opts.Logger,
		func(ctx context.Context, tablet pb.DRPCTabletClient) error {
			var err error
			resp, err = tablet.PrefixLookup(ctx, req)
			return err
		})
	if err != nil {
		return nil, pkgerr.Errorf("client", "prefix lookup: %w", err)
	}
	for i, row := range resp.Rows {
		if resp.Rows[i], err = l.t.readRow(ctx, resp.SchemaId, row); err != nil {
			return nil, pkgerr.Errorf("client", "prefix lookup: bucket %d: row %d: %w", bucket, i, err)
		}
	}
	if resp.Truncated {
		return resp.Rows, fmt.Errorf("%w: the first %d rows of bucket %d", ErrPrefixTruncated, len(resp.Rows), bucket)
	}
	return resp.Rows, nil
}
