package kvreplica

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/floedb/floe/storage/kvstore"
)

// DefaultBufferBytes is the zero Config's BufferBytes.
const DefaultBufferBytes = 64 << 20

// Config configures the KV side of a node's primary-key tables.
type Config struct {
	// Store is the template for the Badger store of every primary-key
	// bucket replica (Dir and Logger are set per replica).
	Store kvstore.Config
	// BufferBytes bounds the pre-write buffer of a primary-key bucket
	// leader: the rows of writes appended but not yet committed. Past it,
	// upserts are refused with a retriable UNAVAILABLE until followers
	// catch up. Default 64 MiB.
	BufferBytes int64
	Logger      *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.BufferBytes < 0 {
		return errors.New("kvreplica: config: negative BufferBytes")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.BufferBytes == 0 {
		c.BufferBytes = DefaultBufferBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Tables is the KV side of a node's primary-key tables (a
// replica.KVTables): it makes their tables, knows their open replicas and
// runs the node's value-log collector over them.
type Tables struct {
	cfg Config
	log *slog.Logger

	mu   sync.Mutex
	open map[*kvReplica]struct{}

	stop chan struct{}
	wg   sync.WaitGroup
}

// New starts the KV side of a node, with no replicas open.
func New(cfg Config) (*Tables, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &Tables{cfg: cfg, log: cfg.Logger, open: map[*kvReplica]struct{}{}, stop: make(chan struct{})}
	t.wg.Go(t.collectGarbage)
	return t, nil
}

// Close stops the value-log collector. The replicas are closed by their
// log replicas.
func (t *Tables) Close() {
	t.mu.Lock()
	select {
	case <-t.stop:
		t.mu.Unlock()
		return
	default:
	}
	close(t.stop)
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *Tables) opened(kv *kvReplica) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[kv] = struct{}{}
}

func (t *Tables) closed(kv *kvReplica) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.open, kv)
}
