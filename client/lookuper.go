package client

import (
	"context"
	"errors"
	"hash"
	"sync"

	"github.com/spaolacci/murmur3"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Lookuper reads rows of a primary-key table by key, from the leaders of
// their buckets.
//
// Keys are rows of the table's primary-key schema (Table.PrimaryKeySchema),
// encoded with record.NewRowEncoder or converted from JSON by LookupJSON.
// Concurrent Lookup calls of one bucket share requests: a key goes out at
// once when the bucket has fewer than 4 requests in flight, and otherwise
// waits for one of them to finish and goes out with the keys that queued
// meanwhile, up to MaxBatchKeys a request. Callers who gather keys
// themselves use LookupBatch.
//
// Retriable errors are retried with fresh metadata and a backoff, within
// Timeout. A Lookuper is safe for concurrent use; Close stops its requests.
type Lookuper struct {
	t      *Table
	keys   *tableKeys
	opts   LookuperOptions   // defaults applied
	queues []*lookupQueue    // by bucket
	parts  *partitionLookups // of a partitioned table; queues are then its partitions' lookupers'

	keyJSON    sync.Pool // of *jsonScratch, primary keys
	prefixJSON sync.Pool // of *jsonScratch, bucket keys
	hashers    sync.Pool // of *keyHasher

	base   context.Context // of the shared requests; ends at Close
	cancel context.CancelFunc
	mu     sync.RWMutex // enqueue holds it for reading; Close for writing
	closed bool
	wg     sync.WaitGroup // the shared requests
}

// keyHasher maps keys to buckets.
type keyHasher struct {
	hash    hash.Hash32
	scratch []byte
}

// NewLookuper returns a lookuper of the table's rows. It does no I/O. A log
// table is refused with ErrNotPrimaryKeyTable.
func (t *Table) NewLookuper(opts LookuperOptions) (*Lookuper, error) {
	keys, err := t.requireKeys()
	if err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l := &Lookuper{t: t, keys: keys, opts: opts.withDefaults()}
	if t.parts != nil {
		if l.parts, err = newPartitionLookups(t, keys.keySchema); err != nil {
			return nil, err
		}
	} else {
		l.queues = make([]*lookupQueue, t.info.Buckets)
		for b := range l.queues {
			l.queues[b] = &lookupQueue{bucket: int32(b)}
		}
	}
	l.keyJSON.New = func() any { return &jsonScratch{codec: mustJSONCodec(keys.keySchema)} }
	l.prefixJSON.New = func() any { return &jsonScratch{codec: mustJSONCodec(keys.bucketKeys)} }
	l.hashers.New = func() any { return &keyHasher{hash: murmur3.New32()} }
	l.base, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Lookup returns the row of a primary key, found false when the table has
// none. An invalid key is refused with record.ValidateRow's error. The row
// is the caller's.
func (l *Lookuper) Lookup(ctx context.Context, key []byte) (row []byte, found bool, err error) {
	if err := record.ValidateRow(l.keys.keySchema, key); err != nil {
		return nil, false, err
	}
	return l.lookupValid(ctx, key)
}

// LookupJSON is Lookup of a key given as a JSON object with the primary-key
// columns, and no other.
func (l *Lookuper) LookupJSON(ctx context.Context, object []byte) (row []byte, found bool, err error) {
	js := l.keyJSON.Get().(*jsonScratch)
	key, err := js.codec.AppendRow(nil, object)
	l.keyJSON.Put(js)
	if err != nil {
		return nil, false, err
	}
	return l.lookupValid(ctx, key)
}

// lookupValid queues a valid key with the other keys of its bucket and
// waits for its answer.
func (l *Lookuper) lookupValid(ctx context.Context, key []byte) ([]byte, bool, error) {
	if l.parts != nil {
		return l.lookupPartitioned(ctx, key)
	}
	p := &pendingKey{key: append([]byte(nil), key...), done: make(chan struct{})}
	q := l.queues[l.bucketOfKey(key)]
	batch, err := l.enqueue(q, p)
	switch {
	case err != nil:
		return nil, false, err
	case len(batch) == 1 && batch[0] == p:
		// Alone: send it from this goroutine, which waits anyway, and
		// hand the keys that queue meanwhile to another.
		l.lookupPending(ctx, q.bucket, batch)
		if rest := l.next(q); rest != nil {
			go l.serve(q, rest)
		} else {
			l.wg.Done()
		}
	case batch != nil:
		go l.serve(q, batch)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	if p.err != nil {
		if err := ctx.Err(); err != nil {
			return nil, false, err // as if it had ended the wait
		}
		return nil, false, p.err
	}
	return p.row, len(p.row) > 0, nil
}

// Close fails the lookups in progress with ErrLookuperClosed and waits for
// the lookuper's requests to end.
func (l *Lookuper) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
	if l.parts != nil {
		l.parts.closeChildren()
	}
	return nil
}

// isClosed reports whether Close was called.
func (l *Lookuper) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// bucketOfKey returns the bucket of a valid primary key.
func (l *Lookuper) bucketOfKey(key []byte) int32 {
	h := l.hashers.Get().(*keyHasher)
	defer l.hashers.Put(h)
	bk, err := l.keys.keyBucket.AppendKey(h.scratch[:0], key)
	if err != nil { // a valid key has no null column
		panic("client: bucket key of a valid primary key: " + err.Error())
	}
	h.scratch = bk
	return bucketOfKey(h.hash, bk, l.t.info.Buckets)
}

// lookupKeys asks bucket's leader for the rows of keys, retrying within
// ctx, and returns one row per key, nil when absent. Keys whose rows
// together pass what one answer may carry (the node refuses such a lookup
// TOO_LARGE) are asked for in halves, so that a caller's key never fails
// for the rows of the keys it was batched with.
func (l *Lookuper) lookupKeys(ctx context.Context, bucket int32, keys [][]byte) ([][]byte, error) {
	rows, err := l.lookupOnce(ctx, bucket, keys)
	if err == nil || len(keys) < 2 || !errors.Is(err, transport.ErrTooLarge) {
		return rows, err
	}
	half := len(keys) / 2
	first, err := l.lookupKeys(ctx, bucket, keys[:half])
	if err != nil {
		return nil, err
	}
	second, err := l.lookupKeys(ctx, bucket, keys[half:])
	if err != nil {
		return nil, err
	}
	return append(first, second...), nil
}

// lookupOnce is one Lookup request for keys, retried within ctx.
func (l *Lookuper) lookupOnce(ctx context.Context, bucket int32, keys [][]byte) ([][]byte, error) {
	req := &pb.LookupRequest{TableId: l.t.info.ID, Bucket: bucket, Keys: keys, Linearizable: l.opts.Linearizable}
	var resp *pb.LookupResponse
	err := l.t.callLeader(ctx, bucket, l.opts.RequestTimeout, l.opts.Logger,
		func(ctx context.Context, tablet pb.DRPCTabletClient) error {
			var err error
			resp, err = tablet.Lookup(ctx, req)
			return err
		})
	if err != nil {
		return nil, pkgerr.Errorf("client", "lookup: %w", err)
	}
	if len(resp.RowSizes) != len(keys) {
		return nil, pkgerr.Errorf("client", "lookup: bucket %d answered %d rows for %d keys", bucket, len(resp.RowSizes), len(keys))
	}
	rows := make([][]byte, len(keys))
	off := 0
	for i, n := range resp.RowSizes {
		if n == 0 {
			continue
		}
		if int(n) > len(resp.Rows)-off {
			return nil, pkgerr.Errorf("client", "lookup: bucket %d: row sizes overrun the %d bytes of rows", bucket, len(resp.Rows))
		}
		row := resp.Rows[off : off+int(n) : off+int(n)]
		off += int(n)
		row, err := l.t.readRow(ctx, resp.SchemaId, row)
		if err != nil {
			return nil, pkgerr.Errorf("client", "lookup: bucket %d: row of key %d: %w", bucket, i, err)
		}
		rows[i] = row
	}
	if off != len(resp.Rows) {
		return nil, pkgerr.Errorf("client", "lookup: bucket %d: %d bytes of rows, row sizes add up to %d", bucket, len(resp.Rows), off)
	}
	return rows, nil
}
