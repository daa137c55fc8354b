package kvstore

import (
	"fmt"
	"log/slog"
)

// Defaults of Config, for the one database of a node.
const (
	DefaultMemTableBytes   int64 = 64 << 20
	DefaultBlockCacheBytes int64 = 0
	DefaultIndexCacheBytes int64 = 0
	DefaultNumMemtables          = 2
)

// Config configures a node's DB. The zero value of every field but Dir
// means its default.
type Config struct {
	// Dir is the folder of the Badger database; required.
	Dir string
	// MemTableBytes is the size of one Badger memtable; default 64 MiB. It
	// also bounds one Apply batch: Badger refuses a transaction larger than
	// about 15% of it (see ErrBatchTooLarge).
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	}
	return nil
}
