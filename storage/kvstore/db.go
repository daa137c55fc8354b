package kvstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/floedb/floe/internal/pkgerr"
)

// Badger settings that do not come from Config, chosen for one database
// holding the rows of every primary-key bucket replica of a node, rows of
// about a kilobyte.
const (
	// valueLogFileBytes bounds each value-log file (Badger's default is
	// 1 GiB): a collection rewrites one file, so smaller files reclaim
	// space in smaller steps.
	valueLogFileBytes = 64 << 20
	// numCompactors is the fewest Badger accepts when compaction is on.
	numCompactors = 2
	// baseTableBytes is the size of level-1 tables. Every table is one
	// open file and one mapping, so they are not as small as Badger's
	// 2 MiB default.
	baseTableBytes = 8 << 20
	// baseLevelBytes is how large the level L0 compacts into may grow
	// before Badger puts a level above it (Badger's default is 10 MiB).
	// Keys and value pointers take about 40 bytes a row, so the database
	// keeps just L0 and one sorted level until it holds a million or two
	// rows: a point read, and each row the value-log collector checks, then
	// searches fewer tables.
	baseLevelBytes = 64 << 20
	// levelZeroTables is how many flushed memtables wait in L0 before
	// Badger compacts them into the sorted level (its default is 5). The
	// compaction drops the overwritten versions of keys and is what tells
	// the value-log collector where garbage is: with 5, a node
	// overwriting 1 KiB rows at full speed kept every value-log file it
	// wrote for minutes, the collector seeing no garbage at all.
	levelZeroTables = 1
)

// StoreID names the store of one bucket replica in a DB.
type StoreID struct {
	Table  uint64
	Bucket uint32
}

func (id StoreID) String() string { return fmt.Sprintf("%d/%d", id.Table, id.Bucket) }

// prefix is the first bytes of every key of the store: bucketNamespace,
// then the table and the bucket as unsigned varints. Varints are a
// prefix-free code, so no store's prefix is a prefix of another's, and
// DropPrefix of one store touches no other.
func (id StoreID) prefix() []byte {
	p := make([]byte, 0, 1+2*binary.MaxVarintLen64)
	p = append(p, bucketNamespace)
	p = binary.AppendUvarint(p, id.Table)
	return binary.AppendUvarint(p, uint64(id.Bucket))
}

// DB is the Badger database a node's primary-key bucket replicas share:
// one set of memtables, compactors, value log and files for all of them,
// so an idle bucket costs its keys on disk and nothing else. Each replica
// reads and writes through its Store, whose keys carry its StoreID.
//
// A DB is safe for concurrent use.
type DB struct {
	bdb            *badger.DB
	cache          *RowCache
	gcDiscardRatio float64
	closeTimeout   time.Duration

	mu     sync.Mutex
	open   map[StoreID]*Store
	closed bool

	gcMu sync.Mutex // one value-log collection at a time; Close waits for it
	// dropMu serializes drops with Open: a store being dropped is not
	// opened until its rows are gone.
	dropMu sync.Mutex
	// writeMu is held shared by each Apply and exclusively by a drop:
	// Badger refuses every write (ErrBlockedWrites) while a DropPrefix
	// runs, so without it dropping one store failed the applies of the
	// others that ran meanwhile (a partition dropped while the next one
	// is written), and they wait instead.
	writeMu sync.RWMutex
}

// OpenDB opens or creates the node's database in cfg.Dir. Opening replays
// only Badger's own write-ahead tail, whatever the number of stores.
func OpenDB(cfg Config) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	bdb, err := badger.Open(badgerOptions(cfg))
	if err != nil {
		return nil, pkgerr.Errorf("kvstore", "open %s: %w", cfg.Dir, err)
	}
	return &DB{bdb: bdb, cache: cfg.RowCache, gcDiscardRatio: cfg.GCDiscardRatio, closeTimeout: cfg.CloseTimeout, open: map[StoreID]*Store{}}, nil
}

func badgerOptions(cfg Config) badger.Options {
	return badger.DefaultOptions(cfg.Dir).
		WithLogger(badgerLogger{log: cfg.Logger}).
		WithSyncWrites(cfg.SyncWrites).
		WithMemTableSize(cfg.MemTableBytes).
		WithNumMemtables(cfg.NumMemtables).
		WithBlockCacheSize(cfg.BlockCacheBytes).
		WithCompression(options.None). // CPU is scarcer than disk; the log holds the compact copy
		WithIndexCacheSize(cfg.IndexCacheBytes).
		WithNumCompactors(numCompactors).
		WithValueThreshold(cfg.ValueThresholdBytes).
		WithValueLogFileSize(valueLogFileBytes).
		WithBaseTableSize(baseTableBytes).
		WithBaseLevelSize(baseLevelBytes).
		WithNumLevelZeroTables(levelZeroTables).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false). // each store has one writer: its Apply
		WithMetricsEnabled(false)   // Badger's metrics are process-global expvars
}

// Open opens the store of id, empty if it was never written. A store is
// open at most once at a time: a second Open of an open id fails with
// ErrStoreOpen.
func (db *DB) Open(id StoreID) (*Store, error) {
	db.dropMu.Lock()
	defer db.dropMu.Unlock()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	if db.open[id] != nil {
		return nil, fmt.Errorf("%w: %s", ErrStoreOpen, id)
	}
	s := newStore(db, id)
	if err := db.bdb.View(func(txn *badger.Txn) error {
		off, err := readAppliedOffset(txn, s.appliedKey)
		s.appliedOffset.Store(off)
		return err
	}); err != nil {
		return nil, err
	}
	db.open[id] = s
	return s, nil
}

// forget is called by a store's Close.
func (db *DB) forget(s *Store) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.open[s.id] == s {
		delete(db.open, s.id)
	}
}

// Drop deletes every key of the given stores, which must not be open
// (ErrStoreOpen), in one Badger DropPrefix: writes to the whole database
// pause while it runs, so callers drop many stores at once where they can.
// The other stores are untouched.
func (db *DB) Drop(ids ...StoreID) error {
	if len(ids) == 0 {
		return nil
	}
	db.dropMu.Lock()
	defer db.dropMu.Unlock()
	db.mu.Lock()
	closed := db.closed
	var busy []StoreID
	for _, id := range ids {
		if db.open[id] != nil {
			busy = append(busy, id)
		}
	}
	db.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case len(busy) > 0:
		return fmt.Errorf("%w: cannot drop %v while open", ErrStoreOpen, busy)
	}
	prefixes := make([][]byte, len(ids))
	for i, id := range ids {
		prefixes[i] = id.prefix()
	}
	db.writeMu.Lock()
	err := db.bdb.DropPrefix(prefixes...)
	db.writeMu.Unlock()
	if err != nil {
		return pkgerr.Errorf("kvstore", "drop %d stores: %w", len(ids), err)
	}
	return nil
}

// StoreIDs lists the stores that hold any key, in key order. It skips from
// one store to the next without reading their rows.
func (db *DB) StoreIDs() ([]StoreID, error) {
	var ids []StoreID
	err := db.bdb.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte{bucketNamespace}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			id, err := parseStoreKey(it.Item().Key())
			if err != nil {
				return err
			}
			ids = append(ids, id)
			// The smallest key above every key of id: its prefix plus 0xff
			// bytes would still be inside it, so seek past the prefix by
			// incrementing its last byte. Prefixes are varints, whose last
			// byte is below 0x80: the increment never carries.
			next := id.prefix()
			next[len(next)-1]++
			it.Seek(next)
		}
		return nil
	})
	return ids, err
}

// parseStoreKey returns the store a Badger key belongs to.
func parseStoreKey(key []byte) (StoreID, error) {
	if len(key) == 0 || key[0] != bucketNamespace {
		return StoreID{}, fmt.Errorf("%w: key %x outside the bucket namespace", ErrCorrupt, key)
	}
	table, n := binary.Uvarint(key[1:])
	if n <= 0 {
		return StoreID{}, fmt.Errorf("%w: key %x has no table id", ErrCorrupt, key)
	}
	bucket, m := binary.Uvarint(key[1+n:])
	if m <= 0 || bucket > 1<<32-1 {
		return StoreID{}, fmt.Errorf("%w: key %x has no bucket", ErrCorrupt, key)
	}
	return StoreID{Table: table, Bucket: uint32(bucket)}, nil
}

// CollectGarbage rewrites up to maxFiles value-log files of which at
// least minDiscard (a share in (0, 1); 0: Config.GCDiscardRatio) is
// garbage (overwritten or deleted rows of any store), the most garbage
// first, and returns how many it rewrote. It competes with writes for I/O
// and CPU (it looks up every row of a file to tell live from dead), so
// callers run it now and then, not in a loop.
func (db *DB) CollectGarbage(maxFiles int, minDiscard float64) (int, error) {
	if minDiscard < 0 || minDiscard >= 1 {
		return 0, fmt.Errorf("%w: discard share %g, want 0 (the configured one) or a share in (0, 1)", ErrInvalidConfig, minDiscard)
	}
	if minDiscard == 0 {
		minDiscard = db.gcDiscardRatio
	}
	db.gcMu.Lock()
	defer db.gcMu.Unlock()
	db.mu.Lock()
	closed := db.closed
	db.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	n := 0
	for n < maxFiles {
		err := db.bdb.RunValueLogGC(minDiscard)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			return n, nil
		}
		if err != nil {
			return n, pkgerr.Errorf("kvstore", "value-log GC: %w", err)
		}
		n++
	}
	return n, nil
}

// Close closes the stores still open, then the database. Calls after
// Close return ErrClosed; Close itself may be called again and then
// returns nil.
func (db *DB) Close() error {
	db.gcMu.Lock()
	defer db.gcMu.Unlock()
	db.dropMu.Lock()
	defer db.dropMu.Unlock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	open := make([]*Store, 0, len(db.open))
	for _, s := range db.open {
		open = append(open, s)
	}
	db.mu.Unlock()
	for _, s := range open {
		s.Close()
	}
	// Badger's Close waits for its memtables to flush, and a flush that
	// fails is retried forever: past closeTimeout the close is abandoned
	// (its goroutine and files stay until the process exits) so the node
	// can stop. Nothing acknowledged is lost: the bucket logs hold it.
	done := make(chan error, 1)
	go func() { done <- db.bdb.Close() }()
	timer := time.NewTimer(db.closeTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			return pkgerr.Errorf("kvstore", "close: %w", err)
		}
		return nil
	case <-timer.C:
		return fmt.Errorf("%w: Badger did not flush and close within %v (a failing disk? its log says why); abandoned, the bucket logs replay what it did not write", ErrCloseTimeout, db.closeTimeout)
	}
}
