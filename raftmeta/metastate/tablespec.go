package metastate

import (
	"slices"

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
	// defaultReplication is the replication of a table that asks for none,
	// when there are that many tablet nodes.
	defaultReplication = 3
	// defaultClusterBuckets is the bucket count of a table that asks for
	// none, in a cluster of at least that many tablet nodes.
	defaultClusterBuckets = 3
)

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
		if byName[name] != nil {
			return nil, errorf(codeInvalidRequest, "table %q: duplicate column %q", table, name)
		}
		if col.GetType() == "" {
			return nil, errorf(codeInvalidRequest, "table %q: column %q has no type", table, name)
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
		}
	}
	if len(bk) == 0 && len(pk) > 0 {
		bk = pk
	}
	return slices.Clone(bk), nil
}

// validateProperties checks a new table's properties.
func validateProperties(table string, props map[string]string) error {
	if len(props) > MaxProperties {
		return errorf(codeInvalidRequest, "table %q has %d properties; at most %d", table, len(props), MaxProperties)
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first bad key is the same on every replica
	for _, k := range keys {
		switch {
		case k == "":
			return errorf(codeInvalidRequest, "table %q: property with an empty key", table)
		case len(k) > MaxPropertyKeyBytes:
			return errorf(codeInvalidRequest, "table %q: property key %.64q... is %d bytes; at most %d",
				table, k, len(k), MaxPropertyKeyBytes)
		case len(props[k]) > MaxPropertyValueBytes:
			return errorf(codeInvalidRequest, "table %q: property %q value is %d bytes; at most %d",
				table, k, len(props[k]), MaxPropertyValueBytes)
		}
	}
	return nil
}

// bucketsAndReplication resolves the bucket count and replication factor of
// a new table against the number of tablet nodes.
func bucketsAndReplication(table string, c *pb.CreateTable, tabletNodes int) (buckets, replication int32, err error) {
	buckets = c.GetBuckets()
	switch {
	case buckets == 0 && tabletNodes >= defaultClusterBuckets:
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
	case tabletNodes == 0:
		return 0, 0, errorf(codeNotEnoughReplicas, "table %q: no tablet nodes are registered", table)
	case replication == 0:
		replication = int32(min(defaultReplication, tabletNodes))
	case int(replication) > tabletNodes:
		return 0, 0, errorf(codeNotEnoughReplicas, "table %q: replication %d exceeds the %d registered tablet nodes",
			table, replication, tabletNodes)
	}
	return buckets, replication, nil
}
