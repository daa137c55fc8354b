package kvreplica

import (
	"fmt"
	"strings"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// Table properties of primary-key tables.
const (
	MergeEngineProperty    = "merge-engine"
	VersionColumnProperty  = "merge-engine.version-column"
	ChangelogImageProperty = "changelog.image"
	DeleteBehaviorProperty = "delete.behavior"
)

// table is what the replicas of a primary-key table need to merge writes
// and key rows (a replica.KVTable).
type table struct {
	tables *Tables
	name   string
	schema record.Schema
	keys   *kvstore.Keys
	engine kvstore.MergeEngine
	opts   kvstore.MergeOptions
}

// Table reads the key layout and merge properties of a primary-key table.
// The metadata service validated them at creation; an error here means
// metadata this build does not understand.
func (t *Tables) Table(rec *pb.TableRecord, name string, schema record.Schema) (replica.KVTable, error) {
	keys, err := kvstore.NewKeys(schema, rec.BucketKey)
	if err != nil {
		return nil, err
	}
	kv := &table{tables: t, name: name, schema: schema, keys: keys, engine: kvstore.LastRow()}
	props := rec.Properties
	switch v := strings.ToLower(props[MergeEngineProperty]); v {
	case "", "last_row":
	case "first_row":
		kv.engine = kvstore.FirstRow()
	case "versioned":
		col := props[VersionColumnProperty]
		if col == "" {
			return nil, fmt.Errorf("replica: table %s: %s=versioned needs %s", name, MergeEngineProperty, VersionColumnProperty)
		}
		kv.engine = kvstore.Versioned(col)
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", name, MergeEngineProperty, v)
	}
	switch v := strings.ToLower(props[ChangelogImageProperty]); v {
	case "", "full":
	case "wal":
		kv.opts.NoUpdateBefore = true
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", name, ChangelogImageProperty, v)
	}
	switch v := strings.ToLower(props[DeleteBehaviorProperty]); v {
	case "", "allow":
	case "ignore":
		kv.opts.DeleteBehavior = kvstore.DeleteIgnore
	case "disable":
		kv.opts.DeleteBehavior = kvstore.DeleteDisable
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", name, DeleteBehaviorProperty, v)
	}
	return kv, nil
}

// Open opens the KV side of one bucket replica of the table.
func (t *table) Open(r *replica.Replica) (replica.KV, error) {
	return openKV(r, t)
}
