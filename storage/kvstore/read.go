package kvstore

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Get returns a copy of the row stored under the primary key key, and
// whether there is one.
func (s *Store) Get(key []byte) (row []byte, ok bool, err error) {
	err = s.view(func(txn *badger.Txn) error {
		row, err = getRow(txn, key)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return row, row != nil, nil
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
	sizes = make([]uint32, len(keys))
	bk := make([]byte, 0, 64)
	err = s.view(func(txn *badger.Txn) error {
		for i, key := range keys {
			bk = append(append(bk[:0], rowPrefix), key...)
			item, err := txn.Get(bk)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("kvstore: get: %w", err)
			}
			if data == nil {
				// Size the buffer from the first row.
				data = make([]byte, 0, int(item.ValueSize())*(len(keys)-i))
			}
			start := len(data)
			if err := item.Value(func(v []byte) error {
				data = append(data, v...)
				return nil
			}); err != nil {
				return fmt.Errorf("kvstore: get: %w", err)
			}
			sizes[i] = uint32(len(data) - start)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return data, sizes, nil
}

// getRow returns a copy of the row of key, nil when there is none. Rows are
// never empty, so nil is unambiguous.
func getRow(txn *badger.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(rowKey(key))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kvstore: get: %w", err)
	}
	row, err := item.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("kvstore: get: %w", err)
	}
	return row, nil
}

// PrefixScan calls fn for every stored row whose primary key starts with
// prefix, in key byte order, from one consistent view. key and row are only
// valid during the call: fn must copy what it keeps. An error from fn stops
// the scan and is returned as is.
func (s *Store) PrefixScan(prefix []byte, fn func(key, row []byte) error) error {
	return s.view(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = rowKey(prefix)
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()[1:]
			var fnErr error
			if err := item.Value(func(row []byte) error {
				fnErr = fn(key, row)
				return nil
			}); err != nil {
				return fmt.Errorf("kvstore: scan: %w", err)
			}
			if fnErr != nil {
				return fnErr
			}
		}
		return nil
	})
}
