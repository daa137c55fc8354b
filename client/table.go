package client

import (
	"context"
	"fmt"
	"hash"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/spaolacci/murmur3"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// Table is a handle on one table's data: its schema, its buckets and where
// their leaders are. Writers and scanners made from it share its metadata,
// which any of them refreshes when a server says it is stale. A Table is
// safe for concurrent use.
//
// The schema is the table's current one when the handle was made; Refresh
// updates bucket leadership, properties and the schema versions known, not
// the handle's schema: writers go on writing rows of it, and scanners
// hand out every row as a row of it (rows of older versions with null in
// the columns added since, rows of newer ones without the columns added
// after it). Make a new handle to write or read the columns an ALTER
// TABLE added.
type Table struct {
	c         *Client
	info      TableInfo // as loaded; Placement is kept up to date in placement
	schema    record.Schema
	schemaID  int16
	bucketKey *record.KeyEncoder // nil without a bucket key
	keys      *tableKeys         // nil for log tables
	// maxBatchBytes is the largest batch the cluster takes, as the node
	// that answered the metadata said; 0 when it did not.
	maxBatchBytes int
	// tableID is the table's id. info.ID is the id the buckets are keyed
	// by: the table's, or, in a partition's handle, the partition's.
	tableID uint64
	// Partitioning (partitions.go): spec is the table's partition columns
	// (zero: not partitioned); a partitioned table's handle keeps its
	// partitions' handles in parts; a partition's handle has part.
	spec  partition.Spec
	parts *partitionSet
	part  *PartitionInfo

	refreshMu sync.Mutex // one Refresh at a time

	mu        sync.RWMutex
	version   uint64 // raised by every successful Refresh
	placement []Bucket
	leaders   []leaderAddr // by bucket
	// props are the table's properties, and versions its schema versions
	// (versions.go), as of the last load or refresh.
	props    tableprop.Values
	versions map[int16]record.Schema
}

// leaderAddr is where a bucket's leader is, as of the last refresh.
type leaderAddr struct {
	node   uint32 // 0: none
	addr   string // "": unknown
	epoch  int32
	status string // BucketOnline, BucketOffline or BucketNoInSyncReplica
}

// Table loads the metadata of database.name: its schema, buckets and bucket
// leaders.
func (c *Client) Table(ctx context.Context, database, name string) (*Table, error) {
	resp, err := c.getTable(ctx, database, name, "")
	if err != nil {
		return nil, err
	}
	t := &Table{c: c, info: *tableFromPB(resp.Table, nil), maxBatchBytes: int(resp.MaxBatchBytes), tableID: resp.Table.Id}
	t.schema, t.schemaID, err = schemaOf(resp.Table)
	if err != nil {
		return nil, pkgerr.Errorf("client", "table %s.%s: %w", database, name, err)
	}
	if t.spec, err = specOfRecord(resp.Table); err != nil {
		return nil, pkgerr.Errorf("client", "table %s.%s: %w", database, name, err)
	}
	if t.spec.Partitioned() {
		t.parts = &partitionSet{byName: map[string]*Table{}, opening: map[string]*openCall{}}
	}
	if t.info.Buckets <= 0 {
		return nil, pkgerr.Errorf("client", "table %s.%s has %d buckets", database, name, t.info.Buckets)
	}
	if len(t.info.PrimaryKey) > 0 && len(t.info.BucketKey) == 0 {
		t.info.BucketKey = slices.Clone(t.info.PrimaryKey) // the server's default
	}
	if len(t.info.BucketKey) > 0 {
		t.bucketKey, err = record.NewKeyEncoder(t.schema, t.info.BucketKey)
		if err != nil {
			return nil, pkgerr.Errorf("client", "table %s.%s: bucket key: %w", database, name, err)
		}
	}
	if len(t.info.PrimaryKey) > 0 {
		if t.keys, err = newTableKeys(t.schema, t.info.BucketKey); err != nil {
			return nil, pkgerr.Errorf("client", "table %s.%s: %w", database, name, err)
		}
	}
	t.setPlacement(resp)
	t.setSettings(resp.Table)
	t.setVersions(resp.Table)
	return t, nil
}

// getTable loads a table's metadata: its buckets, or, for a partitioned
// table, one partition's buckets (partition "": the list of partitions).
func (c *Client) getTable(ctx context.Context, database, name, partition string) (*pb.GetTableResponse, error) {
	var resp *pb.GetTableResponse
	err := c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.GetTable(ctx, &pb.GetTableRequest{Database: database, Name: name, Partition: partition})
		return err
	})
	if err != nil {
		return nil, err
	}
	if resp.GetTable() == nil {
		return nil, pkgerr.Errorf("client", "table %s.%s: metadata without a table", database, name)
	}
	return resp, nil
}

// schemaOf parses the current schema of t: the last of its versions, whose
// columns carry canonical type strings.
func schemaOf(t *pb.TableRecord) (record.Schema, int16, error) {
	if len(t.Schemas) == 0 {
		return record.Schema{}, 0, fmt.Errorf("no schema")
	}
	cur := t.Schemas[len(t.Schemas)-1]
	if cur.Id < 0 || cur.Id > math.MaxInt16 {
		return record.Schema{}, 0, fmt.Errorf("schema id %d does not fit a batch header", cur.Id)
	}
	var b strings.Builder
	for i, c := range cur.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Type)
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
	}
	if len(t.PrimaryKey) > 0 {
		b.WriteString(", PRIMARY KEY (")
		b.WriteString(strings.Join(t.PrimaryKey, ", "))
		b.WriteByte(')')
	}
	s, err := record.ParseStoredSchema(b.String()) // a table of any build opens
	if err != nil {
		return record.Schema{}, 0, err
	}
	return s, int16(cur.Id), nil
}

// Refresh reloads the bucket leaders and their addresses.
func (t *Table) Refresh(ctx context.Context) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	return t.refreshLocked(ctx)
}

// refreshAfter refreshes unless another caller has done so since the
// caller saw version seen: many senders meeting the same stale leader cause
// one GetTable.
func (t *Table) refreshAfter(ctx context.Context, seen uint64) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	t.mu.RLock()
	done := t.version != seen
	t.mu.RUnlock()
	if done {
		return nil
	}
	return t.refreshLocked(ctx)
}

func (t *Table) refreshLocked(ctx context.Context) error {
	partName := ""
	if t.part != nil {
		partName = t.part.Name
	}
	resp, err := t.c.getTable(ctx, t.info.Database, t.info.Name, partName)
	if err != nil {
		return err
	}
	if resp.Table.Id != t.tableID {
		return fmt.Errorf("%w: %s.%s had id %d, now %d", ErrTableChanged, t.info.Database, t.info.Name, t.tableID, resp.Table.Id)
	}
	if t.part != nil && resp.GetPartition().GetId() != t.info.ID {
		return fmt.Errorf("%w: partition %s of %s had id %d, now %d: it was dropped and created again", ErrUnknownPartition,
			t.part.Name, t.qualifiedName(), t.info.ID, resp.GetPartition().GetId())
	}
	t.setPlacement(resp)
	t.setSettings(resp.Table)
	t.setVersions(resp.Table)
	return nil
}

// setPlacement records the leaders of a GetTable answer.
func (t *Table) setPlacement(resp *pb.GetTableResponse) {
	addrs := make(map[uint32]string, len(resp.Nodes))
	for _, n := range resp.Nodes {
		addrs[n.Id] = n.RpcAddress
	}
	leaders := make([]leaderAddr, t.info.Buckets)
	var placement []Bucket
	for _, b := range resp.Buckets {
		if b.Bucket < 0 || b.Bucket >= t.info.Buckets {
			continue
		}
		leaders[b.Bucket] = leaderAddr{node: b.Leader, addr: addrs[b.Leader], epoch: b.LeaderEpoch, status: bucketStatus(b)}
		placement = append(placement, Bucket{Bucket: b.Bucket, Replicas: b.Replicas, Leader: b.Leader,
			LeaderEpoch: b.LeaderEpoch, ISR: b.Isr, BucketEpoch: b.BucketEpoch})
	}
	t.mu.Lock()
	t.version++
	t.leaders = leaders
	t.placement = placement
	t.mu.Unlock()
}

// leader returns the address of bucket's leader and the metadata version
// it comes from (for refreshAfter).
func (t *Table) leader(bucket int32) (addr string, version uint64, err error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	l := t.leaders[bucket]
	switch {
	case l.status == BucketNoInSyncReplica:
		return "", t.version, fmt.Errorf("%w: bucket %d of %s.%s is %s: its last in-sync replica lost its data; "+
			"only an unclean election (floe table elect --unclean) brings it back, without that data", ErrNoLeader,
			bucket, t.info.Database, t.info.Name, l.status)
	case l.node == 0:
		return "", t.version, fmt.Errorf("%w: bucket %d of %s.%s is offline until an in-sync replica is alive", ErrNoLeader,
			bucket, t.info.Database, t.info.Name)
	case l.addr == "":
		return "", t.version, fmt.Errorf("%w: bucket %d of %s.%s: no address known for leader node %d", ErrNoLeader,
			bucket, t.info.Database, t.info.Name, l.node)
	}
	return l.addr, t.version, nil
}

// metadataVersion is the version refreshAfter compares against.
func (t *Table) metadataVersion() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.version
}

// tablet returns a Tablet client for the node at addr.
func (t *Table) tablet(addr string) pb.DRPCTabletClient {
	return pb.NewDRPCTabletClient(t.c.pool.Conn(addr))
}

// qualifiedName is the table's DB.TABLE name, for messages, with the
// partition of a partition's handle: DB.TABLE/dt=2026-12-03.
func (t *Table) qualifiedName() string {
	if t.part != nil {
		return t.info.Database + "." + t.info.Name + "/" + t.part.Name
	}
	return t.info.Database + "." + t.info.Name
}

// Info describes the table, with the bucket placement of the last refresh.
func (t *Table) Info() TableInfo {
	info := t.info
	info.Columns = slices.Clone(info.Columns)
	info.PrimaryKey = slices.Clone(info.PrimaryKey)
	info.BucketKey = slices.Clone(info.BucketKey)
	info.Properties = maps.Clone(info.Properties)
	t.mu.RLock()
	info.Placement = slices.Clone(t.placement)
	t.mu.RUnlock()
	return info
}

// ID is the id the handle's buckets are keyed by: the table's id, or in a
// partition's handle (Table.Partition) the partition's.
func (t *Table) ID() uint64 { return t.info.ID }

// TableID is the table's id, in a partition's handle too.
func (t *Table) TableID() uint64 { return t.tableID }

// Buckets is the number of buckets.
func (t *Table) Buckets() int32 { return t.info.Buckets }

// Schema returns the table's schema (a copy).
func (t *Table) Schema() record.Schema {
	return record.Schema{Columns: slices.Clone(t.schema.Columns), PrimaryKey: slices.Clone(t.schema.PrimaryKey)}
}

// SchemaID is the schema version the handle reads and writes rows of.
func (t *Table) SchemaID() int16 { return t.schemaID }

// NewRowEncoder returns an encoder of rows of the table's schema, for
// AppendWriter.Append. An encoder is not safe for concurrent use.
func (t *Table) NewRowEncoder() *record.RowEncoder {
	e, err := record.NewRowEncoder(t.schema)
	if err != nil { // the schema was validated when the handle was made
		panic("client: row encoder of a validated schema: " + err.Error())
	}
	return e
}

// JSONCodec returns a converter between rows of the table's schema and JSON
// objects. A codec is not safe for concurrent use.
func (t *Table) JSONCodec() *record.JSONCodec {
	c, err := record.NewJSONCodec(t.schema)
	if err != nil { // the schema was validated when the handle was made
		panic("client: JSON codec of a validated schema: " + err.Error())
	}
	return c
}

// BucketOf returns the bucket a row goes to in a table with a bucket key:
// BucketOfKey of the row's bucket-key bytes (record.KeyEncoder). The row
// must be valid (record.ValidateRow). A table without a bucket key returns
// ErrNoBucketKey: writers spread its rows by sticky batching.
func (t *Table) BucketOf(row []byte) (int32, error) {
	if t.bucketKey == nil {
		return 0, fmt.Errorf("%w: %s.%s", ErrNoBucketKey, t.info.Database, t.info.Name)
	}
	key, err := t.bucketKey.AppendKey(nil, row)
	if err != nil {
		return 0, err
	}
	return BucketOfKey(key, t.info.Buckets), nil
}

// BucketOfKey maps bucket-key bytes to one of buckets buckets: the 32-bit
// murmur3 hash of the bytes (seed 0), as an unsigned number, modulo buckets.
// Every client and server must agree on it: it never changes.
func BucketOfKey(key []byte, buckets int32) int32 {
	return bucketOfKey(murmur3.New32(), key, buckets)
}

// bucketOfKey is BucketOfKey with a hasher to reuse. It goes through the
// streaming hasher, not murmur3.Sum32, whose pointer arithmetic the race
// detector's pointer checks refuse.
func bucketOfKey(h hash.Hash32, key []byte, buckets int32) int32 {
	h.Reset()
	_, _ = h.Write(key)
	return int32(h.Sum32() % uint32(buckets))
}
