package metastate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// Bounds of a table definition.
const (
	// MaxBuckets is the most buckets a table can have.
	MaxBuckets = 4096
	// MaxProperties is the most properties a table can have.
	MaxProperties = 64
	// MaxPropertyKeyBytes bounds a property key.
	MaxPropertyKeyBytes = 256
	// MaxPropertyValueBytes bounds a property value.
	MaxPropertyValueBytes = 4096
	// DefaultReplication is the replication of a table that asks for none,
	// when there are that many tablet nodes.
	DefaultReplication = 3
	// defaultClusterBuckets is the bucket count of a table that asks for
	// none, in a cluster of at least that many tablet nodes.
	defaultClusterBuckets = 3
)

// ReservedColumnPrefix starts no column name: `floe consume` adds fields so
// named to each row (_bucket, _offset, _timestamp, _change), and a column of
// the same name would be printed twice, its value lost to JSON parsers that
// keep the last key.
const ReservedColumnPrefix = "_"

// validateSchema checks the columns, primary key and bucket key of a new
// table and returns its bucket key (the primary key when a primary-key table
// names none).
func validateSchema(table string, c *pb.CreateTable) ([]string, error) {
	cols := c.GetColumns()
	if len(cols) == 0 {
		return nil, errorf(codeInvalidRequest, "table %q has no columns", table)
	}
	byName := make(map[string]*pb.Column, len(cols))
	for _, col := range cols {
		name := col.GetName()
		if !validName(name) {
			return nil, errorf(codeInvalidRequest, "table %q: invalid column name %.256q: %s", table, name, nameRule)
		}
		if c.GetChecks() >= 1 && strings.HasPrefix(name, ReservedColumnPrefix) {
			return nil, errorf(codeInvalidRequest,
				"table %q: column %q: names starting with %q are reserved for the fields consume adds (_bucket, _offset, _timestamp, _change)",
				table, name, ReservedColumnPrefix)
		}
		if byName[name] != nil {
			return nil, errorf(codeInvalidRequest, "table %q: duplicate column %q", table, name)
		}
		if col.GetType() == "" {
			return nil, errorf(codeInvalidRequest, "table %q: column %q has no type", table, name)
		}
		if isNestedType(col.GetType()) && c.GetChecks() < tableprop.ChecksNestedTypes {
			return nil, errorf(codeInvalidRequest, "table %q: column %q: nested type %.256s needs create-table checks %d (this command has %d)",
				table, name, col.GetType(), tableprop.ChecksNestedTypes, c.GetChecks())
		}
		byName[name] = col
	}
	pk := c.GetPrimaryKey()
	for i, name := range pk {
		col := byName[name]
		switch {
		case col == nil:
			return nil, errorf(codeInvalidRequest, "table %q: primary key column %.256q is not a column", table, name)
		case slices.Contains(pk[:i], name):
			return nil, errorf(codeInvalidRequest, "table %q: primary key lists column %q twice", table, name)
		case col.GetNullable():
			return nil, errorf(codeInvalidRequest, "table %q: primary key column %q is nullable", table, name)
		case isNestedType(col.GetType()):
			return nil, errorf(codeInvalidRequest, "table %q: column %q: %s cannot be part of the primary key", table, name, col.GetType())
		}
	}
	bk := c.GetBucketKey()
	for i, name := range bk {
		switch {
		case byName[name] == nil:
			return nil, errorf(codeInvalidRequest, "table %q: bucket key column %.256q is not a column", table, name)
		case slices.Contains(bk[:i], name):
			return nil, errorf(codeInvalidRequest, "table %q: bucket key lists column %q twice", table, name)
		case len(pk) > 0 && !slices.Contains(pk, name):
			return nil, errorf(codeInvalidRequest, "table %q: bucket key column %q is not in the primary key", table, name)
		case isNestedType(byName[name].GetType()):
			return nil, errorf(codeInvalidRequest, "table %q: column %q: %s cannot be part of the bucket key", table, name, byName[name].GetType())
		}
	}
	if len(bk) == 0 && len(pk) > 0 {
		bk = pk
	}
	return slices.Clone(bk), nil
}

// isNestedType reports whether a column's type text is ARRAY<…>, MAP<…> or
// ROW<…>. The state machine reads no types (it imports no storage package);
// the proposer parsed them (record.ParseSchema), and the type names of the
// builds before nested types never held "<".
func isNestedType(typ string) bool { return strings.Contains(typ, "<") }

// CreateTableChecks is the version of the create-table checks this build
// asks for in the commands it proposes (pb.CreateTable.Checks): 1 checks
// every property by the registry the replicas read them with
// (internal/tableprop) and reserves the _ prefix of column names; 2 also
// knows the tiering properties (log.ttl, log.segment.bytes, log.local.*,
// kv.snapshot.*); 3 (tableprop.ChecksNestedTypes) accepts columns of the
// nested types ARRAY, MAP and ROW, outside primary and bucket keys; 4
// (tableprop.ChecksLogFormat) also knows log.format, log.compression and
// log.compression.level, and AlterTable commands carry it too. Commands of
// version 0, committed by older builds, are
// applied by the checks of then (tablechecks_v0.go); those of 1 by the
// registry as it was then (tableprop.Table.Checks).
const CreateTableChecks = tableprop.LatestChecks

// validateProperties checks a new table's properties against the registry
// (internal/tableprop) the replicas read them with: an unknown property or a
// value a replica could not use is refused here, listing the valid ones.
func validateProperties(table string, c *pb.CreateTable, replication int32) error {
	if c.GetChecks() == 0 {
		return validatePropertiesV0(table, c)
	}
	props := c.GetProperties()
	if len(props) > MaxProperties {
		return errorf(codeInvalidRequest, "table %q has %d properties; at most %d", table, len(props), MaxProperties)
	}
	keys := slices.Sorted(maps.Keys(props)) // the first bad key is the same on every replica
	for _, k := range keys {
		if len(k) > MaxPropertyKeyBytes || len(props[k]) > MaxPropertyValueBytes {
			return errorf(codeInvalidRequest, "table %q: property %.64q is over %d bytes or its value over %d",
				table, k, MaxPropertyKeyBytes, MaxPropertyValueBytes)
		}
	}
	_, err := tableprop.Parse(props, tableprop.Table{Replication: int(replication), PrimaryKey: len(c.GetPrimaryKey()) > 0,
		Partitioned: len(c.GetPartitionKeys()) > 0, Checks: min(c.GetChecks(), tableprop.LatestChecks)})
	if err != nil {
		return errorf(codeInvalidRequest, "table %q: %v; valid properties: %s", table, err, tableprop.Valid())
	}
	return validateVersionColumn(table, c)
}

// tabletCount is how many tablet nodes a new table may be placed on: the
// registered ones, and of those the live ones when the proposer said which
// are (live -1: it did not, and every registered node is eligible).
type tabletCount struct {
	registered, live int
}

// eligible is the number of nodes a table may be placed on.
func (c tabletCount) eligible() int {
	if c.live < 0 {
		return c.registered
	}
	return c.live
}

// String says which nodes were counted: "2 live tablet nodes (3
// registered)" or "3 registered tablet nodes".
func (c tabletCount) String() string {
	if c.live < 0 {
		return plural(c.registered, "registered tablet node")
	}
	return fmt.Sprintf("%s (%d registered)", plural(c.live, "live tablet node"), c.registered)
}

// bucketsAndReplication resolves the bucket count and replication factor of
// a new table against the tablet nodes it may be placed on.
func bucketsAndReplication(table string, c *pb.CreateTable, nodes tabletCount) (buckets, replication int32, err error) {
	eligible := nodes.eligible()
	buckets = c.GetBuckets()
	switch {
	case buckets == 0 && eligible >= defaultClusterBuckets:
		buckets = defaultClusterBuckets
	case buckets == 0:
		buckets = 1
	case buckets < 1 || buckets > MaxBuckets:
		return 0, 0, errorf(codeInvalidRequest, "table %q: buckets must be 1 to %d, not %d", table, MaxBuckets, buckets)
	}
	replication = c.GetReplication()
	switch {
	case replication < 0:
		return 0, 0, errorf(codeInvalidRequest, "table %q: replication must be at least 1, not %d", table, replication)
	case nodes.registered == 0:
		return 0, 0, errorf(codeNotEnoughReplicas, "table %q: no tablet nodes are registered", table)
	case eligible == 0:
		return 0, 0, errorf(codeNotEnoughReplicas, "table %q: none of the %s is live", table, plural(nodes.registered, "registered tablet node"))
	case replication == 0:
		replication = int32(min(DefaultReplication, eligible))
	case int(replication) > eligible:
		return 0, 0, errorf(codeNotEnoughReplicas, "table %q: replication %d exceeds the %s", table, replication, nodes)
	}
	return buckets, replication, nil
}
