package replica

import (
	"fmt"
	"sync"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/storage/arrowlog"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// tableMeta is what a replica needs to know of its table to check
// batches: its schema versions and properties, read once per version of
// the table's record. A partitioned table's partitions share one: a
// partition's buckets are checked by its table's schema and properties,
// and an ALTER TABLE reaches every partition at once.
type tableMeta struct {
	// tableID is the table's id (a partition's has its own, tableInfo.id).
	tableID  uint64
	schema   record.Schema
	schemaID int32
	// versions are every schema version of the table, oldest first (the
	// last is schema): batches written under any of them are taken.
	versions []SchemaVersion
	// decoders pools Arrow decoders by schema version (*sync.Pool of
	// *arrowlog.Decoder), to validate produced Arrow batches.
	decoders    sync.Map
	primaryKey  bool
	partitioned bool // it has partition columns, and no buckets of its own
	replication int
	minISR      int
	kv          KVTable // primary-key tables only
	// database and table name it in the metadata, to read it by name.
	database, table string
	// props are the table's properties; segmentBytesSet says it set
	// log.segment.bytes itself (else the node's default may apply).
	props           tableprop.Values
	segmentBytesSet bool
	// lake is the table's lake (its prefix and committed version), nil
	// when it never had one.
	lake *pb.LakeState
	// traffic is the table's counters on this node, its partitions'
	// included, the same through every tableMeta of the table
	// (Manager.Apply carries it over); never nil.
	traffic *TableTraffic
}

// tableInfo is one table whose buckets a replica may belong to: a table,
// or a partition of a partitioned table (whose buckets are keyed by the
// partition's id). It is small: a table of 10,000 partitions has 10,000
// of them over one tableMeta.
type tableInfo struct {
	*tableMeta
	// id is the id the buckets are keyed by: the table's, or the
	// partition's.
	id uint64
	// name is database.table, or database.table/partition, for messages.
	name string
	// partition names the partition ("dt=2026-12-03"); "" for a table.
	partition string
}

// physical is the tableInfo of the table itself (partition "") or of its
// partition id.
func (t *tableMeta) physical(id uint64, partition string) *tableInfo {
	name := t.database + "." + t.table
	if partition != "" {
		name += "/" + partition
	}
	return &tableInfo{tableMeta: t, id: id, name: name, partition: partition}
}

// qualified is database.table, without a partition.
func (t *tableMeta) qualified() string { return t.database + "." + t.table }

// arrowDecoder returns a decoder of Arrow payloads of schema version id
// (schema s), from the table's pool of them; give it back with
// releaseDecoder. Decoders keep their buffers, so validating a produced
// batch allocates little.
func (t *tableMeta) arrowDecoder(id int16, s record.Schema, maxBodyBytes int) (*arrowlog.Decoder, error) {
	if p, ok := t.decoders.Load(id); ok {
		if d, ok := p.(*sync.Pool).Get().(*arrowlog.Decoder); ok {
			return d, nil
		}
	}
	return arrowlog.NewDecoderConfig(s, arrowlog.DecoderConfig{MaxBodyBytes: maxBodyBytes})
}

// releaseDecoder gives back a decoder of schema version id.
func (t *tableMeta) releaseDecoder(id int16, d *arrowlog.Decoder) {
	p, _ := t.decoders.LoadOrStore(id, new(sync.Pool))
	p.(*sync.Pool).Put(d)
}

// SchemaVersion is one schema version of a table.
type SchemaVersion struct {
	ID     int32
	Schema record.Schema
}

// schemaOf returns the schema version id, or false when the table has no
// such version (yet: a writer's metadata may be newer than this node's).
func (t *tableMeta) schemaOf(id int16) (record.Schema, bool) {
	for i := len(t.versions) - 1; i >= 0; i-- {
		if t.versions[i].ID == int32(id) {
			return t.versions[i].Schema, true
		}
	}
	return record.Schema{}, false
}

// MinInsyncReplicasProperty is the table property for min.insync.replicas.
const MinInsyncReplicasProperty = tableprop.MinInsyncReplicas

// ErrUnusableTable marks table metadata this node cannot use: stored by a
// build that checked less (a property out of range, a type this build does
// not know). The table's buckets get no replica here, and requests for them
// are answered with the reason, never as if the table had been dropped.
var ErrUnusableTable = pkgerr.New("replica", "unusable table metadata")

// newTableInfo reads the metadata of a table that is not partitioned; the
// KV side of a primary-key table comes from kv.
func newTableInfo(t *pb.TableRecord, kv KVTables) (*tableInfo, error) {
	meta, err := newTableMeta(t, kv)
	if err != nil {
		return nil, err
	}
	return meta.physical(t.Id, ""), nil
}

// newTableMeta reads a table's metadata; the KV side of a primary-key
// table comes from kv.
func newTableMeta(t *pb.TableRecord, kv KVTables) (*tableMeta, error) {
	if len(t.Schemas) == 0 {
		return nil, fmt.Errorf("%w: table %s.%s has no schema", ErrUnusableTable, t.Database, t.Name)
	}
	versions, err := SchemaVersions(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusableTable, err)
	}
	cur := versions[len(versions)-1]
	meta := &tableMeta{tableID: t.Id, schema: cur.Schema, schemaID: cur.ID, versions: versions,
		primaryKey: len(t.PrimaryKey) > 0, partitioned: len(t.PartitionKeys) > 0, replication: int(t.Replication),
		database: t.Database, table: t.Name, traffic: &TableTraffic{}, lake: t.Lake}
	name := meta.qualified()
	props, err := tableprop.ParseStored(t.Properties, tableprop.Table{Replication: meta.replication, PrimaryKey: meta.primaryKey,
		Partitioned: meta.partitioned, CreatedChecks: t.GetChecks()})
	if err != nil {
		return nil, fmt.Errorf("%w: table %s: %w", ErrUnusableTable, name, err)
	}
	meta.minISR = props.MinInsyncReplicas
	meta.props = props
	_, meta.segmentBytesSet = t.Properties[tableprop.LogSegmentBytes]
	if meta.primaryKey {
		if kv == nil {
			return nil, pkgerr.Errorf("replica", "table %s has a primary key and this node has no KV tables", name)
		}
		kvt, err := kv.Table(t, name, meta.schema)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusableTable, err)
		}
		meta.kv = kvt
	}
	return meta, nil
}

// SchemaVersions reads every schema version of a table, oldest first.
func SchemaVersions(t *pb.TableRecord) ([]SchemaVersion, error) {
	out := make([]SchemaVersion, 0, len(t.Schemas))
	for _, v := range t.Schemas {
		s := record.Schema{PrimaryKey: t.PrimaryKey}
		for _, c := range v.Columns {
			typ, err := record.ParseType(c.Type)
			if err != nil {
				return nil, fmt.Errorf("table %s.%s column %q: %w", t.Database, t.Name, c.Name, err)
			}
			s.Columns = append(s.Columns, record.Column{Name: c.Name, Type: typ, Nullable: c.Nullable})
		}
		out = append(out, SchemaVersion{ID: v.Id, Schema: s})
	}
	return out, nil
}
