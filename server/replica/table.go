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

// tableInfo is what a replica needs to know of its table to check batches.
type tableInfo struct {
	id       uint64
	name     string
	schema   record.Schema
	schemaID int32
	// versions are every schema version of the table, oldest first (the
	// last is schema): batches written under any of them are taken.
	versions []SchemaVersion
	// decoders pools Arrow decoders by schema version (*sync.Pool of
	// *arrowlog.Decoder), to validate produced Arrow batches.
	decoders    sync.Map
	primaryKey  bool
	replication int
	minISR      int
	kv          KVTable // primary-key tables only
	// database and table name it in the metadata (name is both, for
	// messages), to read it by name.
	database, table string
	// props are the table's properties; segmentBytesSet says it set
	// log.segment.bytes itself (else the node's default may apply).
	props           tableprop.Values
	segmentBytesSet bool
	// traffic is the table's counters on this node, the same through
	// every tableInfo of the table (Manager.Apply carries it over); never
	// nil.
	traffic *TableTraffic
}

// arrowDecoder returns a decoder of Arrow payloads of schema version id
// (schema s), from the table's pool of them; give it back with
// releaseDecoder. Decoders keep their buffers, so validating a produced
// batch allocates little.
func (t *tableInfo) arrowDecoder(id int16, s record.Schema, maxBodyBytes int) (*arrowlog.Decoder, error) {
	if p, ok := t.decoders.Load(id); ok {
		if d, ok := p.(*sync.Pool).Get().(*arrowlog.Decoder); ok {
			return d, nil
		}
	}
	return arrowlog.NewDecoderConfig(s, arrowlog.DecoderConfig{MaxBodyBytes: maxBodyBytes})
}

// releaseDecoder gives back a decoder of schema version id.
func (t *tableInfo) releaseDecoder(id int16, d *arrowlog.Decoder) {
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
func (t *tableInfo) schemaOf(id int16) (record.Schema, bool) {
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

// newTableInfo reads a table's metadata; the KV side of a primary-key
// table comes from kv.
func newTableInfo(t *pb.TableRecord, kv KVTables) (*tableInfo, error) {
	if len(t.Schemas) == 0 {
		return nil, fmt.Errorf("%w: table %s.%s has no schema", ErrUnusableTable, t.Database, t.Name)
	}
	versions, err := SchemaVersions(t)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusableTable, err)
	}
	cur := versions[len(versions)-1]
	s := cur.Schema
	info := &tableInfo{id: t.Id, name: t.Database + "." + t.Name, schema: s, schemaID: cur.ID, versions: versions,
		primaryKey: len(t.PrimaryKey) > 0, replication: int(t.Replication), database: t.Database, table: t.Name,
		traffic: &TableTraffic{}}
	props, err := tableprop.ParseStored(t.Properties, tableprop.Table{Replication: info.replication, PrimaryKey: info.primaryKey,
		CreatedChecks: t.GetChecks()})
	if err != nil {
		return nil, fmt.Errorf("%w: table %s: %w", ErrUnusableTable, info.name, err)
	}
	info.minISR = props.MinInsyncReplicas
	info.props = props
	_, info.segmentBytesSet = t.Properties[tableprop.LogSegmentBytes]
	if info.primaryKey {
		if kv == nil {
			return nil, pkgerr.Errorf("replica", "table %s has a primary key and this node has no KV tables", info.name)
		}
		kvt, err := kv.Table(t, info.name, info.schema)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusableTable, err)
		}
		info.kv = kvt
	}
	return info, nil
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
