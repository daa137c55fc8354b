package kvreplica

import (
	"log/slog"
	"runtime"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/kvstore"
)

// DefaultBufferBytes is the zero Config's BufferBytes.
const DefaultBufferBytes = 64 << 20

// Config configures the KV side of a node's primary-key tables.
type Config struct {
	// DB configures the node's one Badger database, which the stores of
	// all its primary-key bucket replicas share; DB.Dir is required (the
	// Logger is set here).
	DB kvstore.Config
	// ReplicaKept reports whether the node still has the replica a store
	// belongs to (its log). At start the stores of replicas it does not
	// have are dropped: a crash between a replica's deletion and its
	// store's drop leaves them, and without its log a store is of no use
	// (a replica made again starts from an empty log, and so an empty
	// store). Nil keeps every store.
	ReplicaKept func(kvstore.StoreID) bool
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
		return pkgerr.New("kvreplica", "config: negative BufferBytes")
	}
	return c.DB.Validate()
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
// replica.KVTables): the node's database, which every open replica's store
// lives in, the applier workers that keep those stores at their high
// watermarks, the dropper that deletes the stores of dropped replicas, and
// the value-log collector.
type Tables struct {
	cfg Config
	log *slog.Logger
	db  *kvstore.DB

	mu   sync.Mutex
	open map[*kvReplica]struct{}

	applier applier
	dropper dropper

	stop chan struct{}
	wg   sync.WaitGroup
}

// New opens the node's database and starts the KV side, with no replicas
// open.
func New(cfg Config) (*Tables, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dbCfg := cfg.DB
	dbCfg.Logger = cfg.Logger.With("component", "badger")
	db, err := kvstore.OpenDB(dbCfg)
	if err != nil {
		return nil, err
	}
	if err := dropOrphans(db, cfg.ReplicaKept, cfg.Logger); err != nil {
		db.Close()
		return nil, err
	}
	t := &Tables{cfg: cfg, log: cfg.Logger, db: db, open: map[*kvReplica]struct{}{}, stop: make(chan struct{})}
	t.applier.init(applyWorkers())
	t.dropper.init(db, t.log)
	for range t.applier.workers {
		t.wg.Go(t.applier.run)
	}
	t.wg.Go(t.dropper.run)
	t.wg.Go(t.collectGarbage)
	return t, nil
}

// applyWorkers is how many replicas' stores catch up at once: enough to
// keep the cores busy while some wait on Badger's writes.
func applyWorkers() int { return max(2, 2*runtime.GOMAXPROCS(0)) }

// Close stops the applier, finishes the pending drops, stops the
// collector and closes the database. The replicas are closed by their log
// replicas first.
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
	t.applier.close()
	t.dropper.close()
	t.wg.Wait()
	if err := t.db.Close(); err != nil {
		t.log.Error("close KV database", "err", err)
	}
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

// dropOrphans drops the stores of replicas the node no longer has.
func dropOrphans(db *kvstore.DB, kept func(kvstore.StoreID) bool, log *slog.Logger) error {
	if kept == nil {
		return nil
	}
	ids, err := db.StoreIDs()
	if err != nil {
		return err
	}
	var orphans []kvstore.StoreID
	for _, id := range ids {
		if !kept(id) {
			orphans = append(orphans, id)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	log.Info("dropping KV stores of replicas this node no longer has", "stores", len(orphans), "first", orphans[0].String())
	return db.Drop(orphans...)
}
