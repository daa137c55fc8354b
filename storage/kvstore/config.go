package kvstore

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config, for the one database of a node.
const (
	DefaultMemTableBytes   int64 = 16 << 20
	DefaultBlockCacheBytes int64 = 0
	DefaultIndexCacheBytes int64 = 0
	DefaultNumMemtables          = 2
	// DefaultValueThresholdBytes keeps rows up to 256 bytes in the LSM
	// tree and puts larger ones in the value log.
	DefaultValueThresholdBytes int64 = 256
	// DefaultGCDiscardRatio rewrites a value-log file once half of it is
	// garbage.
	DefaultGCDiscardRatio = 0.5
	// DefaultCloseTimeout is far above what flushing the memtables takes
	// on a working disk (a second or two for 2 × 16 MiB).
	DefaultCloseTimeout = 30 * time.Second
)

// Config configures a node's DB. The zero value of every field but Dir
// means its default.
type Config struct {
	// Dir is the folder of the Badger database; required.
	Dir string
	// MemTableBytes is the size of one Badger memtable; default 16 MiB. It
	// also bounds one Apply batch: Badger refuses a transaction larger than
	// about 15% of it (see ErrBatchTooLarge). A flushed memtable is
	// compacted at once (levelZeroTables), and only that compaction tells
	// the value-log collector which rows were overwritten: with 1 KiB rows
	// in the value log a 16 MiB memtable holds about 250,000 writes, a
	// 64 MiB one a million, and until they are compacted their garbage
	// stays on disk. Write throughput measured the same with either.
	MemTableBytes int64
	// BlockCacheBytes is the Badger block cache; default none: tables
	// are not compressed, so reads go straight to the mapped files and the
	// page cache.
	BlockCacheBytes int64
	// IndexCacheBytes bounds the memory of table indexes and bloom
	// filters; default none: every table's index stays in memory (a few
	// bytes per key), which keeps point reads off a cache's atomics.
	IndexCacheBytes int64
	// NumMemtables is how many memtables Badger keeps, the active one
	// included, before it stalls writes; default 2.
	NumMemtables int
	// ValueThresholdBytes: rows larger than this live in Badger's value
	// log, the others in its LSM tree; default
	// DefaultValueThresholdBytes. At most 15% of MemTableBytes (Badger's
	// limit on one write).
	ValueThresholdBytes int64
	// GCDiscardRatio is the share of a value-log file that must be garbage
	// (overwritten or deleted rows) before CollectGarbage rewrites it;
	// default DefaultGCDiscardRatio.
	GCDiscardRatio float64
	// SyncWrites makes every Apply fsync the Badger value log before it
	// returns. The bucket logs are the durable copy, so it is off by
	// default: a crash loses a tail of the database's writes, and each
	// store's applied offset, written with its rows, says where replay
	// from its log resumes.
	SyncWrites bool
	// RowCache, shared by the node's stores, keeps recently read rows in
	// memory; nil: none.
	RowCache *RowCache
	// Logger receives Badger's messages; nil discards them.
	Logger *slog.Logger
	// CloseTimeout bounds how long Close waits for Badger to flush its
	// memtables and close its files; default DefaultCloseTimeout. Badger
	// retries a failing flush forever (a full or vanished disk), and a
	// node must still stop then: the bucket logs hold every applied row,
	// so what the flush did not write is replayed on the next open.
	CloseTimeout time.Duration
}

// withDefaults returns cfg with zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.MemTableBytes == 0 {
		cfg.MemTableBytes = DefaultMemTableBytes
	}
	if cfg.BlockCacheBytes == 0 {
		cfg.BlockCacheBytes = DefaultBlockCacheBytes
	}
	if cfg.IndexCacheBytes == 0 {
		cfg.IndexCacheBytes = DefaultIndexCacheBytes
	}
	if cfg.NumMemtables == 0 {
		cfg.NumMemtables = DefaultNumMemtables
	}
	if cfg.ValueThresholdBytes == 0 {
		cfg.ValueThresholdBytes = DefaultValueThresholdBytes
	}
	if cfg.GCDiscardRatio == 0 {
		cfg.GCDiscardRatio = DefaultGCDiscardRatio
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = DefaultCloseTimeout
	}
	return cfg
}

// Validate checks the fields; errors match ErrInvalidConfig.
func (cfg Config) Validate() error {
	switch {
	case cfg.Dir == "":
		return fmt.Errorf("%w: Dir is required", ErrInvalidConfig)
	case cfg.MemTableBytes < 0 || (cfg.MemTableBytes > 0 && cfg.MemTableBytes < 1<<20):
		return fmt.Errorf("%w: MemTableBytes %d, want 0 (default) or at least 1 MiB", ErrInvalidConfig, cfg.MemTableBytes)
	case cfg.MemTableBytes > 1<<30:
		return fmt.Errorf("%w: MemTableBytes %d, more than 1 GiB", ErrInvalidConfig, cfg.MemTableBytes)
	case cfg.BlockCacheBytes < 0:
		return fmt.Errorf("%w: BlockCacheBytes %d is negative", ErrInvalidConfig, cfg.BlockCacheBytes)
	case cfg.IndexCacheBytes < 0:
		return fmt.Errorf("%w: IndexCacheBytes %d is negative", ErrInvalidConfig, cfg.IndexCacheBytes)
	case cfg.NumMemtables < 0 || cfg.NumMemtables == 1 || cfg.NumMemtables > 16:
		return fmt.Errorf("%w: NumMemtables %d, want 0 (default) or 2 to 16", ErrInvalidConfig, cfg.NumMemtables)
	case cfg.ValueThresholdBytes < 0 || cfg.ValueThresholdBytes > 1<<20:
		return fmt.Errorf("%w: ValueThresholdBytes %d, want 0 (default) to 1 MiB", ErrInvalidConfig, cfg.ValueThresholdBytes)
	case cfg.CloseTimeout < 0:
		return fmt.Errorf("%w: CloseTimeout %v is negative", ErrInvalidConfig, cfg.CloseTimeout)
	case cfg.GCDiscardRatio < 0 || cfg.GCDiscardRatio >= 1:
		return fmt.Errorf("%w: GCDiscardRatio %g, want 0 (default) or a share in (0, 1)", ErrInvalidConfig, cfg.GCDiscardRatio)
	}
	if mt := cmp.Or(cfg.MemTableBytes, DefaultMemTableBytes); cmp.Or(cfg.ValueThresholdBytes, DefaultValueThresholdBytes) > mt*15/100 {
		return fmt.Errorf("%w: ValueThresholdBytes %d is more than 15%% of a %d-byte memtable", ErrInvalidConfig, cfg.ValueThresholdBytes, mt)
	}
	return nil
}
