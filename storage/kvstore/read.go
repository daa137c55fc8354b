package kvstore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// Get returns a copy of the row stored under the primary key key, and
// whether there is one.
func (s *Store) Get(key []byte) (row []byte, ok bool, err error) {
	data, sizes, err := s.GetPacked([][]byte{key})
	if err != nil || sizes[0] == 0 {
		return nil, false, err
	}
	return data, true, nil
}

// GetBatch returns copies of the rows of keys, in order, from one
// consistent view; a missing key gives nil. The rows share one buffer.
func (s *Store) GetBatch(keys [][]byte) ([][]byte, error) {
	data, sizes, err := s.GetPacked(keys)
	if err != nil {
		return nil, err
	}
	rows := make([][]byte, len(keys))
	off := 0
	for i, n := range sizes {
		if n > 0 {
			rows[i] = data[off : off+int(n) : off+int(n)]
			off += int(n)
		}
	}
	return rows, nil
}

// GetPacked returns the rows of keys, in order, from one consistent view,
// laid end to end in data; sizes[i] is the size of key i's row, 0 when it
// is absent (stored rows are never empty).
func (s *Store) GetPacked(keys [][]byte) (data []byte, sizes []uint32, err error) {
	return s.AppendPacked(nil, keys, 0)
}

// maxPresizeBytes bounds the room AppendPacked makes ahead of the rows: its
// guess (the first row's size for every key left) is only a guess, and one
// 1 MiB row before 4095 more keys would have asked for 4 GiB.
const maxPresizeBytes = 4 << 20

// AppendPacked is GetPacked appending the rows to dst, which it grows
// ahead at most once, by at most maxPresizeBytes. Rows come from the row
// cache, else from one Badger view, which a read the cache answers whole
// never opens. maxBytes > 0 bounds the bytes appended: a read that would
// pass it stops and fails with ErrAnswerTooLarge.
func (s *Store) AppendPacked(dst []byte, keys [][]byte, maxBytes int) (data []byte, sizes []uint32, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return dst, nil, ErrClosed
	}
	data = dst
	sizes = make([]uint32, len(keys))
	commits := s.commits.Load() // before any read: see fill
	var batch *cacheBatch
	if s.cache != nil {
		batch = s.cacheLookup(keys)
		defer batch.release()
	}
	// found records key i's row, just appended at start, and after the
	// first one makes room for as many rows of its size as keys remain,
	// within maxPresizeBytes and maxBytes.
	sized := false
	found := func(i, start int) error {
		sizes[i] = uint32(len(data) - start)
		appended := len(data) - len(dst)
		if maxBytes > 0 && appended > maxBytes {
			return fmt.Errorf("%w: the rows of keys 0 to %d of %d pass %d bytes", ErrAnswerTooLarge, i, len(keys), maxBytes)
		}
		if !sized {
			sized = true
			room := min((len(data)-start)*(len(keys)-i-1), maxPresizeBytes)
			if maxBytes > 0 {
				room = min(room, maxBytes-appended)
			}
			data = slices.Grow(data, room)
		}
		return nil
	}
	bk := make([]byte, 0, 64)
	read := func(txn *badger.Txn) error {
		for i, key := range keys {
			start := len(data)
			var ck []byte
			if batch != nil {
				if sp := batch.spans[i]; sp.n > 0 {
					data = append(data, batch.rows[sp.at:sp.at+int(sp.n)]...)
					if err := found(i, start); err != nil {
						return err
					}
					continue
				}
				ck = batch.keys[i]
			}
			bk = s.appendRowKey(bk[:0], key)
			item, err := txn.Get(bk)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return pkgerr.Errorf("kvstore", "get: %w", err)
			}
			if err := item.Value(func(v []byte) error {
				data = append(data, v...)
				return nil
			}); err != nil {
				return pkgerr.Errorf("kvstore", "get: %w", err)
			}
			if err := found(i, start); err != nil {
				return err
			}
			s.fill(ck, data[start:], commits)
		}
		return nil
	}
	if batch != nil && batch.hits == len(keys) {
		err = read(nil) // the cache had every row: no view, no read timestamp
	} else {
		err = s.db.bdb.View(read)
	}
	if err != nil {
		return dst, nil, err
	}
	return data, sizes, nil
}

// cacheLookup reads the cached rows of keys in one batch; the caller
// releases it.
func (s *Store) cacheLookup(keys [][]byte) *cacheBatch {
	b := cacheBatches.Get().(*cacheBatch)
	b.reset(len(keys))
	for _, key := range keys {
		b.keyBuf = appendCacheKey(b.keyBuf, s.cacheID, key)
	}
	at := 0
	for i, key := range keys {
		n := 8 + len(key)
		b.keys[i] = b.keyBuf[at : at+n : at+n]
		at += n
	}
	s.cache.lookupRows(b)
	return b
}

// fill caches row under cache key ck (nil: no cache) unless an Apply
// committed since commits was read, before the read began: the row might
// then be older than the store. Apply counts its commit before it
// invalidates, and both that check and the invalidation run under the
// cache shard's lock, so a stale row is either never cached or
// invalidated after it was.
func (s *Store) fill(ck, row []byte, commits uint64) {
	if s.cache == nil {
		return
	}
	if !s.filled.Load() {
		s.filled.Store(true) // before put's check of commits: see refreshCache
	}
	s.cache.put(ck, row, func() bool { return s.commits.Load() == commits })
}

// PrefixScan calls fn for every stored row whose primary key starts with
// prefix, in key byte order, from one consistent view. key and row are only
// valid during the call: fn must copy what it keeps. An error from fn stops
// the scan and is returned as is.
func (s *Store) PrefixScan(prefix []byte, fn func(key, row []byte) error) error {
	return s.view(func(txn *badger.Txn) error { return s.scan(txn, prefix, fn) })
}

// Export calls fn for every row of the store, in key order, from one
// consistent view, and returns the applied offset of that view: the rows
// are the bucket's state just below it, and replaying the log from there
// gives the rest. It reads this store's keys alone, whatever else the DB
// holds (what a KV snapshot copies). key and row are only valid during
// the call.
func (s *Store) Export(fn func(key, row []byte) error) (appliedOffset int64, err error) {
	err = s.view(func(txn *badger.Txn) error {
		if appliedOffset, err = readAppliedOffset(txn, s.appliedKey); err != nil {
			return err
		}
		return s.scan(txn, nil, fn)
	})
	return appliedOffset, err
}

func (s *Store) scan(txn *badger.Txn, prefix []byte, fn func(key, row []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = s.appendRowKey(nil, prefix)
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()[len(s.rowKeyPrefix):]
		var fnErr error
		if err := item.Value(func(row []byte) error {
			fnErr = fn(key, row)
			return nil
		}); err != nil {
			return pkgerr.Errorf("kvstore", "scan: %w", err)
		}
		if fnErr != nil {
			return fnErr
		}
	}
	return nil
}
