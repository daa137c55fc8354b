package kvstore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// Get returns a copy of the row stored under the primary key key, with its
// schema id, and whether there is one.
func (s *Store) Get(key []byte) (row Row, ok bool, err error) {
	p, err := s.GetPacked([][]byte{key})
	if err != nil || p.Sizes[0] == 0 {
		return Row{}, false, err
	}
	return Row{SchemaID: p.SchemaIDs[0], Data: p.Data}, true, nil
}

// GetBatch returns copies of the rows of keys, with their schema ids, in
// order, from one consistent view; a missing key gives a Row with nil
// Data. The rows share one buffer.
func (s *Store) GetBatch(keys [][]byte) ([]Row, error) {
	p, err := s.GetPacked(keys)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, len(keys))
	off := 0
	for i, n := range p.Sizes {
		if n > 0 {
			rows[i] = Row{SchemaID: p.SchemaIDs[i], Data: p.Data[off : off+int(n) : off+int(n)]}
			off += int(n)
		}
	}
	return rows, nil
}

// Packed is rows laid end to end, as GetPacked and AppendPacked answer.
type Packed struct {
	// Data holds the rows end to end.
	Data []byte
	// Sizes[i] is the size of key i's row, 0 when it is absent (stored
	// rows are never empty).
	Sizes []uint32
	// SchemaIDs[i] is the schema version key i's row is written in.
	SchemaIDs []int16
}

// GetPacked returns the rows of keys, in order, from one consistent view,
// laid end to end.
func (s *Store) GetPacked(keys [][]byte) (Packed, error) {
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
// pass it stops and fails with ErrAnswerTooLarge. On an error, Data is dst.
func (s *Store) AppendPacked(dst []byte, keys [][]byte, maxBytes int) (Packed, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Packed{Data: dst}, ErrClosed
	}
	data := dst
	sizes := make([]uint32, len(keys))
	ids := make([]int16, len(keys))
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
	var value []byte // a row read from Badger in the cache's form
	read := func(txn *badger.Txn) error {
		for i, key := range keys {
			start := len(data)
			var ck []byte
			if batch != nil {
				if sp := batch.spans[i]; sp.n > 0 {
					id, row, err := splitValue(batch.rows[sp.at : sp.at+int(sp.n)])
					if err != nil {
						return err
					}
					ids[i] = id
					data = append(data, row...)
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
			if err := itemRow(item, func(id int16, row []byte) error {
				ids[i] = id
				data = append(data, row...)
				return nil
			}); err != nil {
				return pkgerr.Errorf("kvstore", "get: %w", err)
			}
			if err := found(i, start); err != nil {
				return err
			}
			if ck != nil {
				value = appendValue(value[:0], ids[i], data[start:])
				s.fill(ck, value, commits)
			}
		}
		return nil
	}
	var err error
	if batch != nil && batch.hits == len(keys) {
		err = read(nil) // the cache had every row: no view, no read timestamp
	} else {
		err = s.db.bdb.View(read)
	}
	if err != nil {
		return Packed{Data: dst}, err
	}
	return Packed{Data: data, Sizes: sizes, SchemaIDs: ids}, nil
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

// fill caches value (a row in the cache's form: see appendValue) under
// cache key ck (nil: no cache) unless an Apply
// committed since commits was read, before the read began: the row might
// then be older than the store. Apply counts its commit before it
// invalidates, and both that check and the invalidation run under the
// cache shard's lock, so a stale row is either never cached or
// invalidated after it was.
func (s *Store) fill(ck, value []byte, commits uint64) {
	if s.cache == nil || ck == nil {
		return
	}
	if !s.filled.Load() {
		s.filled.Store(true) // before put's check of commits: see refreshCache
	}
	s.cache.put(ck, value, func() bool { return s.commits.Load() == commits })
}

// PrefixScan calls fn for every stored row whose primary key starts with
// prefix, in key byte order, from one consistent view. key and row.Data
// are only valid during the call: fn must copy what it keeps. An error from fn stops
// the scan and is returned as is.
func (s *Store) PrefixScan(prefix []byte, fn func(key []byte, row Row) error) error {
	return s.view(func(txn *badger.Txn) error { return s.scan(txn, prefix, fn) })
}

// Export calls fn for every row of the store, in key order, from one
// consistent view, and returns the applied offset of that view: the rows
// are the bucket's state just below it, and replaying the log from there
// gives the rest. It reads this store's keys alone, whatever else the DB
// holds (what a KV snapshot copies), each row with its schema id
// (LegacySchemaID for one stored without). key and row.Data are only
// valid during the call.
func (s *Store) Export(fn func(key []byte, row Row) error) (appliedOffset int64, err error) {
	err = s.view(func(txn *badger.Txn) error {
		if appliedOffset, err = readAppliedOffset(txn, s.appliedKey); err != nil {
			return err
		}
		return s.scan(txn, nil, fn)
	})
	return appliedOffset, err
}

func (s *Store) scan(txn *badger.Txn, prefix []byte, fn func(key []byte, row Row) error) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = s.appendRowKey(nil, prefix)
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()[len(s.rowKeyPrefix):]
		var fnErr error
		if err := itemRow(item, func(id int16, row []byte) error {
			fnErr = fn(key, Row{SchemaID: id, Data: row})
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
