package metastate

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	bolt "go.etcd.io/bbolt"
)

const (
	// RequestRetention is how long a request id is remembered, measured in
	// Raft append times: a command whose request id was applied at most this
	// long before its own append time is answered with the first result.
	RequestRetention = 15 * time.Minute
	// MaxRequests bounds the remembered request ids; past it the oldest are
	// forgotten first.
	MaxRequests = 100_000
	// MaxRequestIDBytes bounds a request id; a longer one is refused.
	MaxRequestIDBytes = 128

	// pruneBatch bounds the request ids forgotten by one Apply.
	pruneBatch = 64
	// openTimeout bounds the wait for the file lock of a state file that
	// another process holds open.
	openTimeout = 5 * time.Second
	// initialMmapBytes is mapped up front, so a growing file rarely remaps
	// (a remap waits for open read transactions such as a snapshot).
	initialMmapBytes = 64 << 20
)

// State is the metadata state machine over its bbolt file. Apply must be
// called in Raft log order (Raft calls it from one goroutine); reads may run
// concurrently with Apply, WriteSnapshot and Restore.
type State struct {
	path   string
	logger *slog.Logger

	// applyMu serializes Apply.
	applyMu sync.Mutex
	// broken is set when a commit failed: the file no longer follows the
	// log, so Apply refuses everything until a reopen or a Restore. Guarded
	// by applyMu.
	broken error
	// commitFault, when set, fails the commit of the indexes it returns an
	// error for: the fault tests' stand-in for a full or failing disk.
	// Guarded by applyMu.
	commitFault func(index uint64) error

	// mu guards db: reads, Apply and WriteSnapshot hold it for reading,
	// Restore and Close for writing, so nobody sees a closed db.
	mu sync.RWMutex
	db *bolt.DB

	// feed holds the recent metadata updates for Changes and wakes
	// WaitApplied.
	feed *feed

	// index derives from the bucket records what commands would otherwise
	// read the whole catalog for; nil until a command needs it after Open or
	// Restore. Guarded by applyMu.
	index *bucketIndex

	// maxRequests is MaxRequests; tests lower it.
	maxRequests uint64
}

// Open opens (or creates) the state file at path. A nil logger discards.
func Open(path string, logger *slog.Logger) (*State, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	removeRestoreLeftovers(path, logger)
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	applied, err := readAppliedIndex(db)
	if err != nil {
		db.Close()
		return nil, pkgerr.Errorf("metastate", "open %s: %w", path, err)
	}
	s := &State{path: path, logger: logger, db: db, feed: newFeed(applied), maxRequests: MaxRequests}
	return s, nil
}

// readAppliedIndex reads the applied index of a file.
func readAppliedIndex(db *bolt.DB) (uint64, error) {
	var applied uint64
	err := db.View(func(tx *bolt.Tx) (err error) {
		applied, err = getU64(tx.Bucket(bucketMeta), keyAppliedIndex)
		return err
	})
	return applied, err
}

// openDB opens the bbolt file and creates or checks its layout.
func openDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, InitialMmapSize: initialMmapBytes})
	if err != nil {
		return nil, pkgerr.Errorf("metastate", "open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) != nil {
			if err := checkLayout(tx); err != nil {
				return err
			}
			return createBuckets(tx, addedBuckets)
		}
		if err := createBuckets(tx, addedBuckets); err != nil {
			return err
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return putU64(tx.Bucket(bucketMeta), keyFormat, formatVersion)
	})
	if err != nil {
		db.Close()
		return nil, pkgerr.Errorf("metastate", "open %s: %w", path, err)
	}
	return db, nil
}

// createBuckets creates the buckets missing of names.
func createBuckets(tx *bolt.Tx, names [][]byte) error {
	for _, name := range names {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// checkLayout verifies that a file holds a state of this format.
func checkLayout(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return pkgerr.Errorf("metastate", "not a state file: bucket %s missing", name)
		}
	}
	v, err := getU64(tx.Bucket(bucketMeta), keyFormat)
	if err != nil {
		return err
	}
	if v != formatVersion {
		return pkgerr.Errorf("metastate", "state file format %d, want %d", v, formatVersion)
	}
	return nil
}

// removeRestoreLeftovers deletes temp files of a Restore that crashed.
func removeRestoreLeftovers(path string, logger *slog.Logger) {
	matches, _ := filepath.Glob(path + restoreTempSuffix + "*")
	for _, m := range matches {
		if err := os.Remove(m); err != nil {
			logger.Warn("metastate: remove restore leftover", "path", m, "err", err)
		}
	}
}

// Close closes the file. Reads and applies after it fail with ErrClosed;
// WaitApplied returns ErrClosed and Changes reports not ok.
func (s *State) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feed.close()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return pkgerr.Errorf("metastate", "close: %w", err)
	}
	return nil
}

// view runs fn in a read transaction.
func (s *State) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	return s.db.View(fn)
}

// AppliedIndex is the Raft index of the last applied command (0 for a new
// file or a closed state). It is the metadata feed's: it moves once an
// Apply has committed and recorded its update, so Changes(after) taken after
// reading it lists every update up to it, and WaitApplied(it) waits for the
// next command. (A View's AppliedIndex, like an Image's index, may be one
// command ahead of it.)
func (s *State) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return 0
	}
	return s.feed.appliedIndex()
}

// ClusterID is the id InitCluster set, or "" before that.
func (s *State) ClusterID() string {
	var id string
	_ = s.view(func(tx *bolt.Tx) error {
		id = string(tx.Bucket(bucketMeta).Get(keyClusterID))
		return nil
	})
	return id
}
