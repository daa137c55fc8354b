package tiering

import (
	"context"
	"strconv"
	"strings"
)

// CollectKVSnapshots deletes the bucket's KV snapshot objects that no
// retained snapshot (their manifest keys) references and that a leader of
// leaderEpoch or an earlier one wrote: manifests of dropped or
// never-committed snapshots and the parts only they used. It returns how
// many it deleted.
//
// The caller leads the bucket at leaderEpoch, has just committed a
// snapshot, read retained from the metadata after that commit, and found
// itself still the leader at leaderEpoch there (server/kvsnapshot.go). The
// check and the deletes are not one step: a newer leader may store and
// commit a snapshot meanwhile. Its manifest and the parts it uploaded name
// its later epoch and are left alone. The parts it reused come from the
// snapshots of the list its commit named the version of, so from the
// committed list at its commit: each of those is retained, or was
// committed after retained was read, by a later leader, the same way. No
// snapshot committed later can thus reference an object of leaderEpoch or
// before that retained does not.
func CollectKVSnapshots(ctx context.Context, cfg KVSnapshotConfig, leaderEpoch int32, retained []string) (int, error) {
	keep := map[string]bool{}
	for _, key := range retained {
		keep[key] = true
		m, err := ReadKVManifest(ctx, cfg.Store, key)
		if err != nil {
			return 0, err
		}
		for _, p := range m.Parts {
			keep[p.Key] = true
		}
	}
	prefix := kvPrefix(cfg.Root, cfg.TableID, cfg.Bucket)
	var garbage []string
	if err := cfg.Store.List(ctx, prefix, func(o ObjectInfo) error {
		if keep[o.Key] {
			return nil
		}
		if epoch, ok := kvKeyEpoch(strings.TrimPrefix(o.Key, prefix)); ok && epoch <= leaderEpoch {
			garbage = append(garbage, o.Key)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if len(garbage) == 0 {
		return 0, nil
	}
	return len(garbage), cfg.Store.Delete(ctx, garbage...)
}

// kvKeyEpoch reads the leader epoch that wrote a KV snapshot object from
// its key (rest: the part after kvPrefix). A part stored before part keys
// named one (parts/<sha-256>.part) counts as epoch 0: any leader may
// collect it once unreferenced. ok is false for a key in no known shape,
// which collection leaves alone.
func kvKeyEpoch(rest string) (epoch int32, ok bool) {
	if name, found := strings.CutPrefix(rest, "snapshots/"); found {
		fields := strings.SplitN(name, "-", 3)
		if len(fields) != 3 || !strings.HasSuffix(name, ".json") {
			return 0, false
		}
		return parseEpoch(fields[1])
	}
	name, found := strings.CutPrefix(rest, "parts/")
	if !found || !strings.HasSuffix(name, ".part") {
		return 0, false
	}
	dir, file, nested := strings.Cut(name, "/")
	switch {
	case !nested:
		return 0, true
	case strings.Contains(file, "/"):
		return 0, false
	}
	return parseEpoch(dir)
}

func parseEpoch(s string) (int32, bool) {
	e, err := strconv.ParseInt(s, 10, 32)
	if err != nil || e < 0 {
		return 0, false
	}
	return int32(e), true
}
