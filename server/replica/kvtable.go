package replica

import (
	"fmt"
	"strings"

	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/transport/pb"
)

// Table properties of primary-key tables.
const (
	MergeEngineProperty    = "merge-engine"
	VersionColumnProperty  = "merge-engine.version-column"
	ChangelogImageProperty = "changelog.image"
	DeleteBehaviorProperty = "delete.behavior"
)

// kvTableInfo is what the replicas of a primary-key table need to merge
// writes and key rows.
type kvTableInfo struct {
	keys   *kvstore.Keys
	engine kvstore.MergeEngine
	opts   kvstore.MergeOptions
}

// newKVTableInfo reads the key layout and merge properties of a primary-key
// table. The metadata service validated them at creation; an error here
// means metadata this build does not understand.
func newKVTableInfo(t *pb.TableRecord, info *tableInfo) (*kvTableInfo, error) {
	keys, err := kvstore.NewKeys(info.schema, t.BucketKey)
	if err != nil {
		return nil, err
	}
	kv := &kvTableInfo{keys: keys, engine: kvstore.LastRow()}
	props := t.Properties
	switch v := strings.ToLower(props[MergeEngineProperty]); v {
	case "", "last_row":
	case "first_row":
		kv.engine = kvstore.FirstRow()
	case "versioned":
		col := props[VersionColumnProperty]
		if col == "" {
			return nil, fmt.Errorf("replica: table %s: %s=versioned needs %s", info.name, MergeEngineProperty, VersionColumnProperty)
		}
		kv.engine = kvstore.Versioned(col)
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", info.name, MergeEngineProperty, v)
	}
	switch v := strings.ToLower(props[ChangelogImageProperty]); v {
	case "", "full":
	case "wal":
		kv.opts.NoUpdateBefore = true
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", info.name, ChangelogImageProperty, v)
	}
	switch v := strings.ToLower(props[DeleteBehaviorProperty]); v {
	case "", "allow":
	case "ignore":
		kv.opts.DeleteBehavior = kvstore.DeleteIgnore
	case "disable":
		kv.opts.DeleteBehavior = kvstore.DeleteDisable
	default:
		return nil, fmt.Errorf("replica: table %s: unknown %s %q", info.name, DeleteBehaviorProperty, v)
	}
	return kv, nil
}
