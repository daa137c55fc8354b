package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Namespaces: the first byte of every Badger key.
const (
	rowPrefix  byte = 'r'
	metaPrefix byte = 'm'
)

// appliedOffsetKey holds the applied offset, an 8-byte big-endian int64.
var appliedOffsetKey = []byte{metaPrefix, 'a', 'p', 'p', 'l', 'i', 'e', 'd', '_', 'o', 'f', 'f', 's', 'e', 't'}

// Badger settings that do not come from Config, chosen for many small
// databases per node holding rows of about a kilobyte.
const (
	// valueThresholdBytes keeps rows up to 256 bytes in the LSM tree and
	// puts larger ones in the value log (WiscKey): compactions then move
	// keys and pointers, not kilobyte rows, which nearly doubles upsert
	// throughput on a CPU-bound node; a point read of a large row costs one
	// more read, from the mapped value log. Overwritten rows leave garbage
	// there, which CollectGarbage reclaims.
	valueThresholdBytes = 256
	// valueLogFileBytes bounds each value-log file (Badger's default is
	// 1 GiB, too much per bucket).
	valueLogFileBytes = 64 << 20
	// numCompactors is the fewest Badger accepts when compaction is on.
	numCompactors = 2
	// baseTableBytes is the size of level-1 tables.
	baseTableBytes = 2 << 20
	// baseLevelBytes is how large the level L0 compacts into may grow
	// before Badger puts a level above it (Badger's default is 10 MiB).
	// Keys and value pointers take about 35 bytes a row, so a bucket's
	// store keeps just L0 and one sorted level until it holds a million
	// or two rows: a point read, and each row the value-log collector
	// checks, then searches fewer tables (BenchmarkUpdateWithGC: a 64 MiB
	// file collected in 700 ms instead of 830, 7% more rows/s).
	baseLevelBytes = 64 << 20
)

// Store is the Badger key-value state of one primary-key bucket replica.
// Its methods are safe for concurrent use; Apply calls are serialized.
type Store struct {
	db *badger.DB

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

	gcMu          sync.Mutex   // held by CollectGarbage, and by Close to wait for it
	applyMu       sync.Mutex   // serializes Apply
	mu            sync.RWMutex // guards closed: reads and Apply hold it shared, Close exclusively
	closed        bool
	appliedOffset atomic.Int64
}

// Open opens or creates the store in cfg.Dir.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts := badger.DefaultOptions(cfg.Dir).
		WithLogger(badgerLogger{log: cfg.Logger}).
		WithSyncWrites(cfg.SyncWrites).
		WithMemTableSize(cfg.MemTableBytes).
		WithNumMemtables(cfg.NumMemtables).
		WithBlockCacheSize(cfg.BlockCacheBytes).
		WithCompression(options.None). // CPU is scarcer than disk; the log holds the compact copy
		WithIndexCacheSize(cfg.IndexCacheBytes).
		WithNumCompactors(numCompactors).
		WithValueThreshold(valueThresholdBytes).
		WithValueLogFileSize(valueLogFileBytes).
		WithBaseTableSize(baseTableBytes).
		WithBaseLevelSize(baseLevelBytes).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false). // one writer: Apply
		WithMetricsEnabled(false)   // Badger's metrics are process-global expvars
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("kvstore: open %s: %w", cfg.Dir, err)
	}
	s := &Store{db: db, cache: cfg.RowCache}
	if s.cache != nil {
		s.cacheID = s.cache.storeID()
	}
	if err := db.View(func(txn *badger.Txn) error {
		off, err := readAppliedOffset(txn)
		s.appliedOffset.Store(off)
		return err
	}); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

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

// Close closes the database. Calls after Close return ErrClosed; Close
// itself may be called again and then returns nil.
func (s *Store) Close() error {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("kvstore: close: %w", err)
	}
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

func readAppliedOffset(txn *badger.Txn) (int64, error) {
	item, err := txn.Get(appliedOffsetKey)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("kvstore: read applied offset: %w", err)
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
func appendRowKey(dst, key []byte) []byte { return append(append(dst, rowPrefix), key...) }

// view runs fn in a read transaction of the open store.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.View(fn)
}
