package tablet

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/server/replica/kvreplica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Config is the tablet role's part of the node's configuration
// (server.Config documents each field).
type Config struct {
	NodeID          uint32
	DataDir         string
	LogSync         logstore.SyncPolicy
	SegmentMaxBytes int64
	Remote          tiering.ObjectStore
	TieringInterval time.Duration
	MaxBatchBytes   int
	KV              kvstore.Config
	KVRowCacheBytes int64
	KVBufferBytes   int64
	LakeCatalog     *lake.RESTCatalog
}

// Meta is how the tablet role reaches the metadata, through the node: its
// own Raft view on a meta node, the meta nodes it knows otherwise.
type Meta interface {
	// Call runs fn against a meta node, trying the known ones in turn
	// while the error is retriable.
	Call(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error
	// Propose replicates cmd through the metadata leader; a refusal
	// recorded in the result is an error.
	Propose(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error)
	// Addresses lists the meta nodes to follow, in the order to try them.
	Addresses() []string
	// Registration waits until this run's registration of the node is
	// committed and returns its Raft index (the node epoch).
	Registration(ctx context.Context) (uint64, error)
}

// Deps is what the tablet role takes from the node.
type Deps struct {
	Config Config
	Meta   Meta
	// Pool dials the node's peers.
	Pool *transport.Pool
	// ClusterID is the cluster the node belongs to, "" until it knows.
	ClusterID func() string
	// OpenWatch starts a metadata watch at a meta node after index from
	// (0: image first).
	OpenWatch func(ctx context.Context, addr string, from uint64) (MetaStream, error)
	// OnMetadata, when set, sees each metadata update after the replicas
	// acted on it.
	OnMetadata func(*pb.MetadataUpdate)
	// WatchIdle is how long a metadata stream may stay silent before the
	// follower gives up on it: a few of the meta role's keepalives.
	WatchIdle time.Duration
	// Go runs a goroutine the node waits for when it stops.
	Go func(func())
	// Stop stops the node with err: a failure it cannot serve through.
	Stop func(error)
	// RPCs counts the write calls of Writes streams.
	RPCs    transport.RPCObserver
	Metrics *Metrics
	Logger  *slog.Logger
}

// Role is a node's tablet role: the bucket replicas (replica.Manager and
// the KV side, kvreplica.Tables), the Tablet service over them, the
// metadata follower that feeds them, tiering and KV snapshots.
type Role struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	follower *metaFollower

	replicas *replica.Manager  // set once Start opened it
	kvTables *kvreplica.Tables // the KV side of the replicas
	ready    atomic.Bool       // replicas and kvTables are set
	// snapshotSem lets one KV snapshot run at a time (kvsnapshot.go).
	snapshotSem chan struct{}
	// lake holds the lake tasks the metadata gives this node (lake.go).
	lake lakeTables
}

// New makes the tablet role; Start opens its replicas.
func New(deps Deps) *Role {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Role{cfg: deps.Config, deps: deps, log: deps.Logger, snapshotSem: make(chan struct{}, 1)}
	r.follower = newMetaFollower(metaFollowerConfig{
		addrs: deps.Meta.Addresses,
		open:  deps.OpenWatch,
		apply: func(u *pb.MetadataUpdate) {
			r.replicas.Apply(u)
			r.lake.note(r.cfg.NodeID, u)
			if deps.OnMetadata != nil {
				deps.OnMetadata(u)
			}
		},
		registration: deps.Meta.Registration,
		idle:         deps.WatchIdle,
		log:          r.log,
	})
	return r
}

// Following is closed once the replicas acted on metadata at or above the
// node's registration.
func (r *Role) Following() <-chan struct{} { return r.follower.Following() }

// FollowerState is what the metadata follower reports for readiness.
type FollowerState struct {
	// Applied is the index of the last metadata the replicas acted on.
	Applied uint64
	// Watching says a metadata stream is up; LastErr is why the last one
	// ended.
	Watching bool
	LastErr  string
}

// FollowerState reports the metadata follower's progress.
func (r *Role) FollowerState() FollowerState {
	_, applied, connected, lastErr := r.follower.state()
	return FollowerState{Applied: applied, Watching: connected, LastErr: lastErr}
}

// Replicas is the replica manager, nil until Start opened it.
func (r *Role) Replicas() *replica.Manager {
	if !r.ready.Load() {
		return nil
	}
	return r.replicas
}

// Close closes the replicas and their KV side.
func (r *Role) Close() {
	if r.replicas != nil {
		if err := r.replicas.Close(); err != nil {
			r.log.Warn("closing replicas", "err", err)
		}
	}
	if r.kvTables != nil {
		r.kvTables.Close()
	}
}

// poolDialer hands out Tablet clients over the node's connection pool.
type poolDialer struct{ pool *transport.Pool }

func (d poolDialer) Tablet(addr string) pb.DRPCTabletClient {
	return pb.NewDRPCTabletClient(d.pool.Conn(addr))
}

// metaClient is what the replicas need of the metadata leader.
type metaClient struct{ meta Meta }

func (c metaClient) AdjustIsr(ctx context.Context, change *pb.AdjustIsr, requestID []byte) (*pb.BucketRecord, error) {
	req := &pb.AdjustIsrRequest{Change: change, RequestId: requestID}
	var resp *pb.AdjustIsrResponse
	err := c.meta.Call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.AdjustIsr(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.Bucket, nil
}

// ReportDamaged proposes the report through the metadata leader.
func (c metaClient) ReportDamaged(ctx context.Context, report *pb.ReportDamagedReplica, requestID []byte) (*pb.BucketRecord, error) {
	res, err := c.meta.Propose(ctx, &pb.Command{RequestId: requestID,
		Op: &pb.Command_ReportDamagedReplica{ReportDamagedReplica: report}})
	if err != nil {
		return nil, err
	}
	return res.GetBucket(), nil
}

// Start opens the replica manager and serves the Tablet service; the
// metadata follower feeds it.
func (r *Role) Start(ctx context.Context) error {
	tabletDir := filepath.Join(r.cfg.DataDir, "tablet")
	kept := func(id kvstore.StoreID) bool {
		_, err := os.Stat(replica.Dir(tabletDir, replica.BucketID{TableID: id.Table, Bucket: int32(id.Bucket)}))
		return !errors.Is(err, fs.ErrNotExist) // only a folder known gone counts
	}
	kv, err := kvreplica.New(kvreplica.Config{DB: r.kvConfig(), ReplicaKept: kept, BufferBytes: r.cfg.KVBufferBytes, Logger: r.log})
	if err != nil {
		return err
	}
	var remote *tiering.Reader
	if r.cfg.Remote != nil {
		if remote, err = tiering.NewReader(tiering.ReaderConfig{Store: r.cfg.Remote}); err != nil {
			kv.Close()
			return err
		}
	}
	dropped := make(chan droppedTable, droppedQueue)
	onDropped := func(id uint64, name string) {
		select {
		case dropped <- droppedTable{id: id, name: name}:
		default: // the objects stay as garbage; a full queue is a flood of drops
			r.log.Warn("too many dropped tables and partitions queued for remote cleanup; leaving this one's objects",
				"id", id, "name", name)
		}
	}
	if r.cfg.Remote == nil {
		onDropped = nil
	}
	m, err := replica.New(replica.Config{
		NodeID:         r.cfg.NodeID,
		Remote:         remote,
		RemoteStore:    r.cfg.Remote,
		OnTableDropped: onDropped,
		Dir:            tabletDir,
		Log:            logstore.Config{Sync: r.cfg.LogSync, SegmentMaxBytes: r.cfg.SegmentMaxBytes},
		MaxBatchBytes:  r.cfg.MaxBatchBytes,
		KV:             kv,
		Meta:           metaClient{r.deps.Meta},
		Dialer:         poolDialer{r.deps.Pool},
		Logger:         r.log,
		OnFail:         func(err error) { r.deps.Stop(pkgerr.Errorf("server", "a bucket replica's log failed: %w", err)) },
	})
	if err != nil {
		kv.Close()
		return err
	}
	r.kvTables, r.replicas = kv, m
	r.ready.Store(true)
	r.deps.Go(func() { r.follower.run(ctx) })
	if r.cfg.Remote != nil {
		r.deps.Go(func() { r.tieringLoop(ctx, dropped) })
		r.deps.Go(func() { r.lakeLoop(ctx) })
	}
	return nil
}

// MaxBatchFor is the largest batch a client should send to table t: the
// node's limit (maxBatchBytes, 0: replica's default), and no more than a
// segment of the table's log holds (log.segment.bytes, else the node's
// segmentMaxBytes, else the property's default). An upsert batch to a
// primary-key table gets a quarter of it: its changelog, with the -U image
// of every row it updates, can be larger than the batch.
func MaxBatchFor(t *pb.TableRecord, maxBatchBytes int, segmentMaxBytes int64) int {
	if maxBatchBytes <= 0 {
		maxBatchBytes = replica.DefaultMaxBatchBytes
	}
	segment := tableprop.DefaultLogSegmentBytes
	v, err := tableprop.ParseStored(t.GetProperties(), tableprop.Table{Replication: int(t.GetReplication()),
		PrimaryKey: len(t.GetPrimaryKey()) > 0, Partitioned: len(t.GetPartitionKeys()) > 0, CreatedChecks: t.GetChecks()})
	_, set := t.GetProperties()[tableprop.LogSegmentBytes]
	switch {
	case err == nil && (set || segmentMaxBytes == 0):
		segment = int(v.LogSegmentBytes)
	case segmentMaxBytes > 0:
		segment = int(segmentMaxBytes)
	}
	if len(t.GetPrimaryKey()) > 0 {
		segment /= 4
	}
	return min(maxBatchBytes, segment)
}

// kvConfig configures the node's KV database, which the stores of all its
// primary-key bucket replicas share, with the node's row cache.
func (r *Role) kvConfig() kvstore.Config {
	kv := r.cfg.KV
	kv.Dir = filepath.Join(r.cfg.DataDir, "tablet", "kv")
	size := r.cfg.KVRowCacheBytes
	if size == 0 {
		size = DefaultKVRowCacheBytes()
	}
	kv.RowCache = kvstore.NewRowCache(size) // nil when size < 0
	r.log.Info("KV row cache", "max_bytes", max(size, 0))
	return kv
}
