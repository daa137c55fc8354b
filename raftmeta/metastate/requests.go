package metastate

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// requestEntry is a remembered request id: when and at which index it was
// applied, and what it returned.
type requestEntry struct {
	appliedAtMs int64
	index       uint64
	result      *pb.CommandResult
}

// requestHeaderBytes: applied-at time (sortable) and index, both big-endian.
const requestHeaderBytes = 16

// orderKey is the request_order key of an entry: time, then index.
func orderKey(appliedAtMs int64, index uint64) []byte {
	k := binary.BigEndian.AppendUint64(nil, sortableMs(appliedAtMs))
	return binary.BigEndian.AppendUint64(k, index)
}

// expired reports whether an entry applied at appliedAtMs is past
// RequestRetention at nowMs.
func expired(appliedAtMs, nowMs int64) bool {
	// The difference of two int64 fits a uint64 when it is positive.
	return appliedAtMs < nowMs && uint64(nowMs-appliedAtMs) > uint64(RequestRetention.Milliseconds())
}

// getRequest returns the entry of a request id, or nil.
func getRequest(tx *bolt.Tx, id []byte) (*requestEntry, error) {
	v := tx.Bucket(bucketRequests).Get(id)
	if v == nil {
		return nil, nil
	}
	if len(v) < requestHeaderBytes {
		return nil, fmt.Errorf("%w: request entry %x is %d bytes", ErrCorrupt, id, len(v))
	}
	e := &requestEntry{
		appliedAtMs: fromSortableMs(binary.BigEndian.Uint64(v)),
		index:       binary.BigEndian.Uint64(v[8:]),
		result:      &pb.CommandResult{},
	}
	if err := proto.Unmarshal(v[requestHeaderBytes:], e.result); err != nil {
		return nil, fmt.Errorf("%w: request entry %x: %v", ErrCorrupt, id, err)
	}
	return e, nil
}

// putRequest remembers a request id's result, replacing an expired entry of
// the same id.
func putRequest(tx *bolt.Tx, id []byte, e *requestEntry) error {
	requests, order, meta := tx.Bucket(bucketRequests), tx.Bucket(bucketRequestOrder), tx.Bucket(bucketMeta)
	count, err := getU64(meta, keyRequestCount)
	if err != nil {
		return err
	}
	old, err := getRequest(tx, id)
	if err != nil {
		return err
	}
	if old != nil {
		if err := order.Delete(orderKey(old.appliedAtMs, old.index)); err != nil {
			return err
		}
	} else {
		count++
	}
	res, err := marshal.Marshal(e.result)
	if err != nil {
		return pkgerr.Errorf("metastate", "encode result: %w", err)
	}
	v := binary.BigEndian.AppendUint64(make([]byte, 0, requestHeaderBytes+len(res)), sortableMs(e.appliedAtMs))
	v = binary.BigEndian.AppendUint64(v, e.index)
	v = append(v, res...)
	if err := requests.Put(id, v); err != nil {
		return err
	}
	if err := order.Put(orderKey(e.appliedAtMs, e.index), id); err != nil {
		return err
	}
	return putU64(meta, keyRequestCount, count)
}

// pruneRequests forgets the oldest request ids while they are past
// RequestRetention at nowMs or there are more than maxEntries, at most
// pruneBatch per call. Every replica prunes the same entries: the inputs are
// the stored state and the Raft append time.
func pruneRequests(tx *bolt.Tx, nowMs int64, maxEntries uint64) error {
	requests, order, meta := tx.Bucket(bucketRequests), tx.Bucket(bucketRequestOrder), tx.Bucket(bucketMeta)
	count, err := getU64(meta, keyRequestCount)
	if err != nil {
		return err
	}
	type victim struct{ key, id []byte }
	var victims []victim
	c := order.Cursor()
	for k, v := c.First(); k != nil && len(victims) < pruneBatch; k, v = c.Next() {
		if len(k) != requestHeaderBytes {
			return fmt.Errorf("%w: request order key %x", ErrCorrupt, k)
		}
		over := count > maxEntries+uint64(len(victims))
		if !over && !expired(fromSortableMs(binary.BigEndian.Uint64(k)), nowMs) {
			break // sorted by time: the rest are younger
		}
		victims = append(victims, victim{key: append([]byte(nil), k...), id: append([]byte(nil), v...)})
	}
	if len(victims) == 0 {
		return nil
	}
	for _, vic := range victims {
		if err := order.Delete(vic.key); err != nil {
			return err
		}
		// The entry is the one this order key points at unless the id was
		// re-applied since, which deletes the old order key: check anyway.
		if cur := requests.Get(vic.id); len(cur) >= requestHeaderBytes && string(cur[:requestHeaderBytes]) == string(vic.key) {
			if err := requests.Delete(vic.id); err != nil {
				return err
			}
		}
	}
	if uint64(len(victims)) > count {
		return fmt.Errorf("%w: request count %d below %d entries", ErrCorrupt, count, len(victims))
	}
	return putU64(meta, keyRequestCount, count-uint64(len(victims)))
}
