package replica

import (
	"context"
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// MetaClient is what a replica needs of the metadata service.
type MetaClient interface {
	// AdjustIsr asks the controller to change a bucket's ISR. Every
	// attempt of one proposal carries the same requestID: the controller
	// answers a retry with the first attempt's outcome.
	AdjustIsr(ctx context.Context, change *pb.AdjustIsr, requestID []byte) (*pb.BucketRecord, error)
	// ReportDamaged tells the controller that this node's replica of a
	// bucket found its log damaged: the replica leaves the ISR and its
	// leadership. It returns the bucket as committed.
	ReportDamaged(ctx context.Context, report *pb.ReportDamagedReplica, requestID []byte) (*pb.BucketRecord, error)
}

// TabletDialer returns a Tablet client for a node's RPC address.
type TabletDialer interface {
	Tablet(address string) pb.DRPCTabletClient
}

// Defaults for the zero Config.
const (
	DefaultReplicaLagMax      = 10 * time.Second
	DefaultMaxBatchBytes      = 8 << 20
	DefaultProduceTimeout     = 30 * time.Second
	DefaultFollowerFetchBytes = 4 << 20
	DefaultFollowerMaxWait    = 500 * time.Millisecond
	isrCheckInterval          = 500 * time.Millisecond
	// hwCheckpointInterval paces the high-watermark files (Kafka's
	// replica.high.watermark.checkpoint.interval.ms): a restarted replica
	// takes min(checkpoint, log end), so an older one is only lower, and
	// writing one file per busy replica every second cost a node's
	// produce path as much as its fsyncs did.
	hwCheckpointInterval = 5 * time.Second
)

// Config configures a Manager.
type Config struct {
	// NodeID is this node's id.
	NodeID uint32
	// Dir holds one folder per bucket replica.
	Dir string
	// Log is the template for every replica's log (Dir is set per replica).
	// All of them share Log.Scheduler (background work, the bound on open
	// segment files); nil: the Manager makes one for the node and closes it
	// after the replicas.
	Log logstore.Config
	// Remote reads the buckets' committed remote logs for consumers that
	// fetch below a leader's local log start; nil: no tiering, such reads
	// are out of range.
	Remote *tiering.Reader
	// RemoteStore is the object store behind Remote, from which a
	// primary-key replica restores KV snapshots; nil: none.
	RemoteStore tiering.ObjectStore
	// KV makes the KV side of primary-key tables (package kvreplica);
	// nil: primary-key tables are not served.
	KV KVTables
	// ReplicaLagMax: a follower that has not caught up with the leader's
	// end for this long leaves the ISR. Default 10 s.
	ReplicaLagMax time.Duration
	// MaxBatchBytes refuses larger produced batches. Default 8 MiB.
	MaxBatchBytes int
	Meta          MetaClient
	Dialer        TabletDialer
	Logger        *slog.Logger
	// OnTableDropped, when set, is called (from the metadata stream's
	// goroutine; it must not block) for each dropped table or partition
	// this node held replicas of, after they are deleted, with the id its
	// buckets are keyed by and its name (database.table, or
	// database.table/partition): the server deletes its remote objects.
	OnTableDropped func(id uint64, name string)
	// OnFail is called (once per failed replica, from its own goroutine)
	// when a replica's log fails: an fsync or write error after which the
	// log can no longer say what is on disk. The replica stops serving at
	// once; the node should stop, so the controller moves its leaderships
	// and a restart recovers the log to its last durable point. Nil: the
	// failure is only logged and the replica stays out of service.
	OnFail func(error)
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == 0:
		return pkgerr.New("replica", "config: NodeID is required")
	case c.Dir == "":
		return pkgerr.New("replica", "config: Dir is required")
	case c.Meta == nil || c.Dialer == nil:
		return pkgerr.New("replica", "config: Meta and Dialer are required")
	case c.ReplicaLagMax < 0 || c.MaxBatchBytes < 0:
		return pkgerr.New("replica", "config: negative limit")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ReplicaLagMax == 0 {
		c.ReplicaLagMax = DefaultReplicaLagMax
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
