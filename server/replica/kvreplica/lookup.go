package kvreplica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Lookup limits.
const (
	// MaxLookupKeys bounds the keys of one Lookup request.
	MaxLookupKeys = 4096
	// MaxPrefixRows bounds the rows of one PrefixLookup answer.
	MaxPrefixRows = 10000
	// MaxLookupAnswerBytes bounds the rows of one Lookup answer, as
	// maxFetchBytesTotal bounds a fetch's: below the 16 MiB message limit,
	// which a larger answer would fail at the client anyway, after the
	// node had built it.
	MaxLookupAnswerBytes = 15 << 20
	// lookupWait bounds how long a lookup waits for the store to reach
	// the high watermark.
	lookupWait = 10 * time.Second
)

// Lookup answers point lookups of primary keys on the bucket's leader.
func (kv *kvReplica) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error) {
	if len(req.Keys) > MaxLookupKeys {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE, "%d keys in one lookup; at most %d", len(req.Keys), MaxLookupKeys)
	}
	keys := kv.table().keys
	storeKeys := make([][]byte, len(req.Keys))
	// The store keys go end to end in one buffer (a key is its primary key
	// bytes, after a bucket-key prefix in the prefix layout); a slice taken
	// before the buffer grows keeps the old array, whose bytes stay as
	// they were.
	size := 0
	for _, k := range req.Keys {
		size += 2*len(k) + 8
	}
	keyBuf := make([]byte, 0, size)
	for i, k := range req.Keys {
		if len(k) > kvstore.MaxKeyBytes {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "key %d: %d bytes over the %d-byte limit", i, len(k), kvstore.MaxKeyBytes)
		}
		if err := record.ValidateRow(keys.KeySchema(), k); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "key %d is not a key of table %s: %v", i, kv.table().name, err)
		}
		start := len(keyBuf)
		var err error
		if keyBuf, err = keys.StoreKey(keyBuf, k); err != nil {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "key %d: %v", i, err)
		}
		storeKeys[i] = keyBuf[start:len(keyBuf):len(keyBuf)]
	}
	epoch, st, err := kv.readFence(ctx, req.Linearizable)
	if err != nil {
		return nil, err
	}
	buf := lookupBufs.Get().(*[]byte)
	packed, err := st.AppendPacked((*buf)[:0], storeKeys, MaxLookupAnswerBytes)
	if err != nil {
		lookupBufs.Put(buf)
		if errors.Is(err, kvstore.ErrAnswerTooLarge) {
			// Refused whole, not cut short: an answer missing rows would
			// read as keys without rows to a client that does not know.
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TOO_LARGE,
				"%v (the %d-byte limit of a lookup answer); ask for fewer keys at once", err, MaxLookupAnswerBytes)
		}
		return nil, replica.WireError(err)
	}
	// The reply is marshaled and sent when this returns; its rows buffer
	// then serves the next lookup instead of becoming garbage (a large,
	// freshly zeroed allocation per request otherwise).
	transport.AfterReply(ctx, func() {
		if cap(packed.Data) <= maxPooledLookupBytes {
			*buf = packed.Data
			lookupBufs.Put(buf)
		}
	})
	// The answer is in the current schema version, which it names.
	info := kv.table()
	data, sizes, err := info.currentPacked(packed.Data, packed.Sizes, packed.SchemaIDs)
	if err != nil {
		return nil, err
	}
	return &pb.LookupResponse{Rows: data, RowSizes: sizes, LeaderEpoch: epoch, SchemaId: int32(info.currentID())}, nil
}

// lookupBufs holds row buffers of answered lookups; buffers over
// maxPooledLookupBytes (rare, huge rows) are left to the garbage collector.
var lookupBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledLookupBytes = 8 << 20

// PrefixLookup answers the rows of one bucket-key value on the bucket's
// leader.
func (kv *kvReplica) PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	keys := kv.table().keys
	if !keys.Prefixed() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"table %s: prefix lookups need a bucket key that is a strict prefix of the primary key", kv.table().name)
	}
	if err := record.ValidateRow(keys.BucketKeySchema(), req.Prefix); err != nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_RECORD, "prefix is not a bucket key of table %s: %v", kv.table().name, err)
	}
	limit := MaxPrefixRows
	if req.Limit > 0 && int(req.Limit) < limit {
		limit = int(req.Limit)
	}
	epoch, st, err := kv.readFence(ctx, req.Linearizable)
	if err != nil {
		return nil, err
	}
	info := kv.table()
	resp := &pb.PrefixLookupResponse{LeaderEpoch: epoch, SchemaId: int32(info.currentID())}
	errLimit := errors.New("limit")
	err = st.PrefixScan(req.Prefix, func(_ []byte, row kvstore.Row) error {
		if len(resp.Rows) == limit {
			resp.Truncated = true
			return errLimit
		}
		if !info.isCurrent(row.SchemaID) {
			cur, err := info.currentRow(row.SchemaID, row.Data, nil)
			resp.Rows = append(resp.Rows, cur)
			return err
		}
		resp.Rows = append(resp.Rows, slices.Clone(row.Data))
		return nil
	})
	if err != nil && !errors.Is(err, errLimit) {
		return nil, replica.WireError(err)
	}
	return resp, nil
}

// readFence waits until this leader's store holds every write committed
// before the call: everything below the high watermark as the call found
// it, and with linearizable, below a barrier committed in the current
// leader epoch after the call arrived, so no newer leader can have
// acknowledged a write the answer misses. It returns the epoch and the
// store to read.
func (kv *kvReplica) readFence(ctx context.Context, linearizable bool) (int32, *kvstore.Store, error) {
	r := kv.r
	epoch, err := r.LeaderEpoch()
	if err != nil {
		return 0, nil, err
	}
	target := r.HighWatermark()
	if linearizable {
		off, barrierEpoch, err := kv.barriers.wait(ctx)
		if err != nil {
			return 0, nil, err
		}
		if barrierEpoch != epoch {
			return 0, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "bucket %s changed leader during the lookup", kv.id)
		}
		target = max(target, off+1)
	}
	deadline := time.Now().Add(lookupWait)
	for {
		ch := r.Changes()
		applied, err := kv.applied()
		if err != nil {
			return 0, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "%v", err)
		}
		if applied >= target {
			break
		}
		kv.wake()
		if !r.WaitChange(ctx, ch, deadline) {
			if ctx.Err() != nil {
				return 0, nil, ctx.Err()
			}
			return 0, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT,
				"bucket %s: the KV store did not reach offset %d within %v (at %d)", kv.id, target, lookupWait, applied)
		}
	}
	if cur, err := r.LeaderEpoch(); err != nil || cur != epoch {
		return 0, nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "bucket %s changed leader during the lookup", kv.id)
	}
	return epoch, kv.store.Load(), nil
}
