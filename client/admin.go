package client

import (
	"context"
	"strings"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// Admin manages databases, tables and the cluster.
type Admin struct {
	c *Client
}

// Option modifies a create or drop call.
type Option func(*options)

type options struct {
	ifNotExists, ifExists, cascade bool
	unchanged                      *bool
	warnings                       *[]string
	requestID                      []byte
}

// RequestID makes a create or drop carry id as its request id instead of a
// fresh one. The metadata answers a request it has seen with the first
// attempt's result and applies it once: a call whose outcome is unknown
// (a timeout, a lost answer) can be repeated with the same id, from any
// client, to learn what happened, or make it happen, exactly once. Ids are
// remembered for a while (minutes), not forever.
func RequestID(id []byte) Option { return func(o *options) { o.requestID = id } }

// id is the request id a call carries: the one given, else a fresh one.
func (o options) id() []byte {
	if o.requestID != nil {
		return o.requestID
	}
	return newRequestID()
}

// IfNotExists makes a create of an existing database or table a no-op.
func IfNotExists() Option { return func(o *options) { o.ifNotExists = true } }

// IfExists makes a drop of a missing database or table a no-op.
func IfExists() Option { return func(o *options) { o.ifExists = true } }

// Unchanged sets *unchanged to whether the call changed nothing: a create
// with IfNotExists of a database or table that already exists, or a drop
// with IfExists of one that does not.
func Unchanged(unchanged *bool) Option { return func(o *options) { o.unchanged = unchanged } }

// Warnings sets *warnings to what the server warned of about a call that
// succeeded: a table created with fewer replicas than it asked for (the
// default replication, 3, on a cluster whose nodes have not all
// registered yet), say.
func Warnings(warnings *[]string) Option { return func(o *options) { o.warnings = warnings } }

// report stores a command's unchanged flag and warnings where Unchanged
// and Warnings asked for them.
func (o options) report(resp *pb.CommandResponse) {
	if o.unchanged != nil {
		*o.unchanged = resp.GetResult().GetUnchanged()
	}
	if o.warnings != nil {
		*o.warnings = resp.GetWarnings()
	}
}

// Cascade lets DropDatabase drop the database's tables too.
func Cascade() Option { return func(o *options) { o.cascade = true } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Database describes a database.
type Database struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
}

// Column is one column of a table's schema.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// Bucket is one bucket's placement and leadership.
type Bucket struct {
	Bucket      int32    `json:"bucket"`
	Replicas    []uint32 `json:"replicas"`
	Leader      uint32   `json:"leader"`
	LeaderEpoch int32    `json:"leader_epoch"`
	ISR         []uint32 `json:"isr"`
	BucketEpoch int32    `json:"bucket_epoch"`
	// Status is BucketOnline, BucketOffline or BucketNoInSyncReplica.
	Status string `json:"status"`
	// UncleanElections counts the leaders chosen from outside the ISR.
	UncleanElections int32 `json:"unclean_elections"`
	// Remote is the bucket's committed remote log (tiering); nil before
	// its first upload.
	Remote *RemoteLog `json:"remote,omitempty"`
	// Snapshot is the newest committed KV snapshot of a primary-key
	// bucket; nil: none.
	Snapshot *KVSnapshot `json:"kv_snapshot,omitempty"`
	// LakeOffset is where the table's lake holds the bucket's records to
	// (below it); 0: none (docs/lake.md).
	LakeOffset int64 `json:"lake_offset,omitempty"`
}

// LakeInfo is a lake-enabled table's lake (docs/lake.md): where its
// Iceberg table lives in the cluster's remote store, its committed
// version, and the tiering tasks.
type LakeInfo struct {
	// Prefix is the table's key prefix in the remote store: engines open
	// <store>/<prefix>/metadata/v<Version>.metadata.json.
	Prefix    string     `json:"prefix"`
	TableUUID string     `json:"table_uuid"`
	Version   int64      `json:"version"`
	Committed time.Time  `json:"committed,omitzero"`
	Tasks     []LakeTask `json:"tasks"`
}

// LakeTask is one node's tiering of the buckets [FirstBucket, EndBucket)
// (of every partition of a partitioned table).
type LakeTask struct {
	Index       uint32 `json:"index"`
	FirstBucket int32  `json:"first_bucket"`
	EndBucket   int32  `json:"end_bucket"`
	Node        uint32 `json:"node"`
}

// RemoteLog is what a bucket holds in remote storage.
type RemoteLog struct {
	// Offsets [StartOffset, EndOffset) are in remote storage.
	StartOffset int64 `json:"start_offset"`
	EndOffset   int64 `json:"end_offset"`
	Segments    int32 `json:"segments"`
	Bytes       int64 `json:"bytes"`
}

func bucketFromPB(b *pb.BucketRecord) Bucket {
	out := Bucket{Bucket: b.Bucket, Replicas: b.Replicas, Leader: b.Leader, LeaderEpoch: b.LeaderEpoch, ISR: b.Isr,
		BucketEpoch: b.BucketEpoch, Status: bucketStatus(b), UncleanElections: b.UncleanElections, LakeOffset: b.LakeOffset}
	if rl := b.GetRemoteLog(); rl != nil {
		out.Remote = &RemoteLog{StartOffset: rl.StartOffset, EndOffset: rl.EndOffset, Segments: rl.Segments, Bytes: rl.Bytes}
	}
	if n := len(b.KvSnapshots); n > 0 {
		s := b.KvSnapshots[n-1]
		out.Snapshot = &KVSnapshot{Bucket: b.Bucket, Offset: s.Offset, Created: time.UnixMilli(s.CreatedMs), Rows: s.Rows,
			Bytes: s.Bytes, ManifestKey: s.ManifestKey}
	}
	return out
}

// Bucket statuses.
const (
	// BucketOnline: the bucket has a leader.
	BucketOnline = "online"
	// BucketOffline: no in-sync replica is alive; the bucket gets a leader
	// again as soon as one is.
	BucketOffline = "offline"
	// BucketNoInSyncReplica: the last in-sync replica lost its data (its
	// node came back wiped). Only an unclean election (ElectLeaders with
	// unclean set, `floe table elect --unclean`) brings the bucket back,
	// losing what only that replica held.
	BucketNoInSyncReplica = "offline: no in-sync replica"
)

// bucketStatus says whether a bucket can serve.
func bucketStatus(b *pb.BucketRecord) string {
	switch {
	case b.GetLeader() != 0:
		return BucketOnline
	case len(b.GetIsr()) > 0:
		return BucketOffline
	default:
		return BucketNoInSyncReplica
	}
}

// TableInfo describes a table: what the metadata says of it.
type TableInfo struct {
	ID          uint64            `json:"id"`
	Database    string            `json:"database"`
	Name        string            `json:"name"`
	Columns     []Column          `json:"columns"`
	SchemaID    int32             `json:"schema_id"`
	PrimaryKey  []string          `json:"primary_key"`
	BucketKey   []string          `json:"bucket_key"`
	Buckets     int32             `json:"buckets"`
	Replication int32             `json:"replication"`
	Properties  map[string]string `json:"properties"`
	// Comment is what the table is for (ALTER TABLE sets it).
	Comment string `json:"comment,omitempty"`
	// PartitionKeys are the partition columns of a partitioned table; its
	// Buckets are each partition's.
	PartitionKeys []string `json:"partition_keys,omitempty"`
	// Partitions of a partitioned table, by name: filled by DescribeTable.
	Partitions []PartitionInfo `json:"partitions,omitempty"`
	// SchemaVersions lists the ids of the table's schema versions, oldest
	// first; the last is SchemaID.
	SchemaVersions []int32 `json:"schema_versions"`
	// LogFormat, LogCompression and LogCompressionLevel are the table's
	// log.format, log.compression and log.compression.level, defaults
	// filled in.
	LogFormat           string `json:"log_format"`
	LogCompression      string `json:"log_compression"`
	LogCompressionLevel int    `json:"log_compression_level"`
	// Unusable says why nodes of this build cannot use the table's stored
	// metadata (a property or type an older build accepted); "" when they
	// can. Requests for such a table are refused with the same reason.
	Unusable string `json:"unusable,omitempty"`
	// Invalid says what in the definition of a table nodes do serve table
	// create would refuse today (stored by an older build that checked
	// less: an unknown property is ignored, a min.insync.replicas above the
	// replication factor counts as the replication factor); "" when none.
	Invalid string `json:"invalid,omitempty"`
	// Placement is filled by DescribeTable.
	Placement []Bucket `json:"placement,omitempty"`
	// Lake is the table's lake once the controller set it up
	// (datalake.enabled); nil: none.
	Lake *LakeInfo `json:"lake,omitempty"`
}

// TableSpec is what CreateTable needs.
type TableSpec struct {
	Database string
	Name     string
	// Schema in the CLI syntax: "id BIGINT NOT NULL, name STRING".
	Schema     string
	PrimaryKey []string
	BucketKey  []string
	// Buckets and Replication: 0 takes the cluster's default.
	Buckets     int32
	Replication int32
	Properties  map[string]string
	// PartitionKeys partition the table (docs/partitions.md): STRING,
	// integer or DATE columns, NOT NULL; of a primary-key table, key
	// columns. Empty: not partitioned.
	PartitionKeys []string
}

// CreateDatabase creates a database.
func (a *Admin) CreateDatabase(ctx context.Context, name string, opts ...Option) error {
	o := collect(opts)
	req := &pb.CreateDatabaseRequest{RequestId: o.id(), Name: name, IfNotExists: o.ifNotExists}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err := m.CreateDatabase(ctx, req)
		o.report(resp)
		return err
	})
}

// DropDatabase drops a database; with Cascade also its tables.
func (a *Admin) DropDatabase(ctx context.Context, name string, opts ...Option) error {
	o := collect(opts)
	req := &pb.DropDatabaseRequest{RequestId: o.id(), Name: name, Cascade: o.cascade, IfExists: o.ifExists}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err := m.DropDatabase(ctx, req)
		o.report(resp)
		return err
	})
}

// ListDatabases lists the databases by name.
func (a *Admin) ListDatabases(ctx context.Context) ([]Database, error) {
	var resp *pb.ListDatabasesResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ListDatabases(ctx, &pb.ListDatabasesRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Database, 0, len(resp.Databases))
	for _, d := range resp.Databases {
		out = append(out, Database{ID: d.Id, Name: d.Name})
	}
	return out, nil
}

// CreateTable creates a table.
func (a *Admin) CreateTable(ctx context.Context, spec TableSpec, opts ...Option) (*TableInfo, error) {
	o := collect(opts)
	req := &pb.CreateTableRequest{
		RequestId: o.id(), Database: spec.Database, Name: spec.Name, Schema: spec.Schema,
		PrimaryKey: spec.PrimaryKey, BucketKey: spec.BucketKey, Buckets: spec.Buckets,
		Replication: spec.Replication, Properties: spec.Properties, IfNotExists: o.ifNotExists,
		PartitionKeys: spec.PartitionKeys,
	}
	var resp *pb.CommandResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CreateTable(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	o.report(resp)
	return tableFromPB(resp.GetResult().GetTable(), nil), nil
}

// DropTable drops a table.
func (a *Admin) DropTable(ctx context.Context, database, name string, opts ...Option) error {
	o := collect(opts)
	req := &pb.DropTableRequest{RequestId: o.id(), Database: database, Name: name, IfExists: o.ifExists}
	return a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		resp, err := m.DropTable(ctx, req)
		o.report(resp)
		return err
	})
}

// ListTables lists a database's tables by name.
func (a *Admin) ListTables(ctx context.Context, database string) ([]TableInfo, error) {
	var resp *pb.ListTablesResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.ListTables(ctx, &pb.ListTablesRequest{Database: database})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]TableInfo, 0, len(resp.Tables))
	for _, t := range resp.Tables {
		out = append(out, *tableFromPB(t, nil))
	}
	return out, nil
}

// DescribeTable returns a table with its bucket placement.
func (a *Admin) DescribeTable(ctx context.Context, database, name string) (*TableInfo, error) {
	var resp *pb.GetTableResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.GetTable(ctx, &pb.GetTableRequest{Database: database, Name: name})
		return err
	})
	if err != nil {
		return nil, err
	}
	info := tableFromPB(resp.Table, resp.Buckets)
	for _, p := range resp.Partitions {
		info.Partitions = append(info.Partitions, partitionFromPB(p))
	}
	return info, nil
}

func tableFromPB(t *pb.TableRecord, buckets []*pb.BucketRecord) *TableInfo {
	if t == nil {
		return nil
	}
	out := &TableInfo{ID: t.Id, Database: t.Database, Name: t.Name, PrimaryKey: nonNil(t.PrimaryKey),
		BucketKey: nonNil(t.BucketKey), Buckets: t.Buckets, Replication: t.Replication, Properties: t.Properties}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	out.Comment = t.Comment
	out.PartitionKeys = t.PartitionKeys
	for _, v := range t.Schemas {
		out.SchemaVersions = append(out.SchemaVersions, v.Id)
	}
	if v, err := tableprop.ParseStored(t.Properties, tableprop.Table{Replication: int(t.Replication),
		PrimaryKey: len(t.PrimaryKey) > 0, CreatedChecks: t.Checks}); err == nil {
		out.LogFormat, out.LogCompression, out.LogCompressionLevel = v.LogFormat, v.LogCompression, v.LogCompressionLevel
	}
	if n := len(t.Schemas); n > 0 {
		cur := t.Schemas[n-1]
		out.SchemaID = cur.Id
		for _, c := range cur.Columns {
			out.Columns = append(out.Columns, Column{Name: c.Name, Type: c.Type, Nullable: c.Nullable})
		}
	}
	for _, b := range buckets {
		out.Placement = append(out.Placement, bucketFromPB(b))
	}
	if l := t.GetLake(); l != nil {
		out.Lake = &LakeInfo{Prefix: l.Prefix, TableUUID: l.TableUuid, Version: l.Version, Tasks: []LakeTask{}}
		if l.CommittedAtMs > 0 {
			out.Lake.Committed = time.UnixMilli(l.CommittedAtMs)
		}
		for _, task := range l.Tasks {
			out.Lake.Tasks = append(out.Lake.Tasks, LakeTask{Index: task.Index, FirstBucket: task.FirstBucket, EndBucket: task.EndBucket, Node: task.NodeId})
		}
	}
	out.Unusable, out.Invalid = checkStored(t)
	return out
}

// nonNil is s, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// SplitTableName splits "db.table".
func SplitTableName(s string) (database, table string, err error) {
	db, t, ok := strings.Cut(s, ".")
	if !ok || db == "" || t == "" || strings.Contains(t, ".") {
		return "", "", pkgerr.Errorf("client", "want DATABASE.TABLE, got %q", s)
	}
	return db, t, nil
}

// LocalDatabases asks the node at addr for the databases in its own state,
// without going through the leader: possibly stale, so it also returns the
// applied index the answer reflects. For checking replicas.
func (a *Admin) LocalDatabases(ctx context.Context, addr string) ([]Database, uint64, error) {
	resp, err := pb.NewDRPCMetaClient(a.c.pool.Conn(addr)).ListDatabases(ctx, &pb.ListDatabasesRequest{Local: true})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Database, 0, len(resp.Databases))
	for _, d := range resp.Databases {
		out = append(out, Database{ID: d.Id, Name: d.Name})
	}
	return out, resp.AppliedIndex, nil
}

// LocalTables is LocalDatabases for a database's tables.
func (a *Admin) LocalTables(ctx context.Context, addr, database string) ([]TableInfo, uint64, error) {
	resp, err := pb.NewDRPCMetaClient(a.c.pool.Conn(addr)).ListTables(ctx, &pb.ListTablesRequest{Database: database, Local: true})
	if err != nil {
		return nil, 0, err
	}
	out := make([]TableInfo, 0, len(resp.Tables))
	for _, t := range resp.Tables {
		out = append(out, *tableFromPB(t, nil))
	}
	return out, resp.AppliedIndex, nil
}
