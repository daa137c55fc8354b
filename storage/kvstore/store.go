package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/floedb/floe/internal/pkgerr"
)

// Key namespaces. Every Badger key of a DB starts with bucketNamespace and
// its store's prefix (see StoreID.prefix); within a store, one byte says
// what the key holds.
const (
	bucketNamespace byte = 'b'

	rowPrefix  byte = 'r'
	metaPrefix byte = 'm'
)

// appliedOffsetName follows a store's prefix and metaPrefix in the key of
// its applied offset, an 8-byte big-endian int64.
const appliedOffsetName = "applied_offset"

// Store is the key-value state of one primary-key bucket replica: its rows
// and applied offset in the node's DB, under its own key prefix. Its
// methods are safe for concurrent use; Apply calls are serialized.
type Store struct {
	db *DB
	id StoreID
	// rowKeyPrefix starts the key of every row; appliedKey is the key of
	// the applied offset.
	rowKeyPrefix []byte
	appliedKey   []byte

	// cache (nil: none) holds rows under cacheID; commits counts the
	// Apply calls that changed rows, so a read can tell whether one
	// committed while it ran (see fill).
	cache   *RowCache
	cacheID uint64
	commits atomic.Uint64
	// filled is set once a read has put a row of this store in the cache;
	// until then Apply has nothing cached to refresh (a follower, which
	// serves no lookups, never pays for it).
	filled atomic.Bool
	// cacheWrites makes Apply cache every row it writes, not only refresh
	// cached ones (see CacheWrites).
	cacheWrites atomic.Bool

	applyMu       sync.Mutex   // serializes Apply
	mu            sync.RWMutex // guards closed: reads and Apply hold it shared, Close exclusively
	closed        bool
	appliedOffset atomic.Int64
}

func newStore(db *DB, id StoreID) *Store {
	p := id.prefix()
	s := &Store{db: db, id: id, cache: db.cache,
		rowKeyPrefix: append(slices.Clip(p), rowPrefix),
		appliedKey:   append(append(slices.Clip(p), metaPrefix), appliedOffsetName...)}
	if s.cache != nil {
		s.cacheID = s.cache.storeID()
	}
	return s
}

// ID is the store's bucket in its DB.
func (s *Store) ID() StoreID { return s.id }

// CacheWrites sets whether Apply caches every row it writes (on) or only
// refreshes rows a read cached (off, the default). A bucket's leader turns
// it on: the rows it writes are the ones its next upserts of those keys
// merge against, and the ones lookups, which go to the leader, ask for
// next. Followers leave it off, so their applies cost no copies and do
// not push the rows the node's leaders use out of the shared cache.
func (s *Store) CacheWrites(on bool) {
	if on {
		s.filled.Store(true) // Apply refreshes from now on, whatever the reads did
	}
	s.cacheWrites.Store(on)
}

// CachingWrites reports whether CacheWrites is on.
func (s *Store) CachingWrites() bool { return s.cacheWrites.Load() }

// Close closes the store, waiting for the reads and the Apply that run;
// its rows stay in the DB (DB.Drop deletes them). Calls after Close return
// ErrClosed; Close itself may be called again and then returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.db.forget(s)
	return nil
}

// AppliedOffset returns the log offset just after the last changelog record
// written by Apply: replay resumes there. A new store returns 0.
func (s *Store) AppliedOffset() (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	return s.appliedOffset.Load(), nil
}

func readAppliedOffset(txn *badger.Txn, key []byte) (int64, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, pkgerr.Errorf("kvstore", "read applied offset: %w", err)
	}
	var off int64
	err = item.Value(func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: applied offset is %d bytes, want 8", ErrCorrupt, len(v))
		}
		off = int64(binary.BigEndian.Uint64(v))
		if off < 0 {
			return fmt.Errorf("%w: negative applied offset %d", ErrCorrupt, off)
		}
		return nil
	})
	return off, err
}

// appendRowKey appends the Badger key of the row of key to dst.
func (s *Store) appendRowKey(dst, key []byte) []byte {
	return append(append(dst, s.rowKeyPrefix...), key...)
}

// view runs fn in a read transaction of the open store.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.bdb.View(fn)
}
