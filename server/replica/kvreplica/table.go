package kvreplica

import (
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
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
	// versions are the table's schema versions, oldest first (the last is
	// schema), with the keys of each (versions.go).
	versions    []replica.SchemaVersion
	versionKeys []*kvstore.Keys
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
	versions, err := replica.SchemaVersions(rec)
	if err != nil {
		return nil, err
	}
	if err := newVersions(kv, versions, rec.BucketKey); err != nil {
		return nil, err
	}
	props, err := tableprop.ParseStored(rec.Properties, tableprop.Table{Replication: int(rec.Replication), PrimaryKey: true,
		Partitioned: len(rec.PartitionKeys) > 0, CreatedChecks: rec.GetChecks()})
	if err != nil {
		return nil, pkgerr.Errorf("kvreplica", "table %s: %w", name, err)
	}
	switch props.MergeEngine {
	case tableprop.MergeFirstRow:
		kv.engine = kvstore.FirstRow()
	case tableprop.MergeVersioned:
		kv.engine = kvstore.Versioned(props.VersionColumn)
	}
	kv.opts.NoUpdateBefore = props.ChangelogImage == tableprop.ImageWAL
	switch props.DeleteBehavior {
	case tableprop.DeleteIgnore:
		kv.opts.DeleteBehavior = kvstore.DeleteIgnore
	case tableprop.DeleteDisable:
		kv.opts.DeleteBehavior = kvstore.DeleteDisable
	}
	return kv, nil
}

// Open opens the KV side of one bucket replica of the table.
func (t *table) Open(r *replica.Replica) (replica.KV, error) {
	return openKV(r, t)
}
