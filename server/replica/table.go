package replica

import (
	"fmt"
	"strconv"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// tableInfo is what a replica needs to know of its table to check batches.
type tableInfo struct {
	id          uint64
	name        string
	schema      record.Schema
	schemaID    int32
	primaryKey  bool
	replication int
	minISR      int
	kv          KVTable // primary-key tables only
}

// MinInsyncReplicasProperty is the table property for min.insync.replicas.
const MinInsyncReplicasProperty = "min.insync.replicas"

// newTableInfo reads a table's metadata; the KV side of a primary-key
// table comes from kv.
func newTableInfo(t *pb.TableRecord, kv KVTables) (*tableInfo, error) {
	if len(t.Schemas) == 0 {
		return nil, fmt.Errorf("replica: table %d has no schema", t.Id)
	}
	cur := t.Schemas[len(t.Schemas)-1]
	s := record.Schema{PrimaryKey: t.PrimaryKey}
	for _, c := range cur.Columns {
		typ, err := record.ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("replica: table %d column %q: %w", t.Id, c.Name, err)
		}
		s.Columns = append(s.Columns, record.Column{Name: c.Name, Type: typ, Nullable: c.Nullable})
	}
	info := &tableInfo{id: t.Id, name: t.Database + "." + t.Name, schema: s, schemaID: cur.Id,
		primaryKey: len(t.PrimaryKey) > 0, replication: int(t.Replication)}
	info.minISR = 1
	if info.replication >= 3 {
		info.minISR = 2
	}
	if v, ok := t.Properties[MinInsyncReplicasProperty]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("replica: table %s: %s=%q is not a positive integer", info.name, MinInsyncReplicasProperty, v)
		}
		info.minISR = n
	}
	if info.primaryKey {
		if kv == nil {
			return nil, fmt.Errorf("replica: table %s has a primary key and this node has no KV tables", info.name)
		}
		kvt, err := kv.Table(t, info.name, info.schema)
		if err != nil {
			return nil, err
		}
		info.kv = kvt
	}
	return info, nil
}
