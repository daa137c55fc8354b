package lake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/floedb/floe/tiering"
)

// DefaultGarbageGrace is how old a file no version references must be
// before CollectGarbage deletes it: far longer than a round runs, so the
// files of a round still under way, not committed yet, are never taken.
const DefaultGarbageGrace = time.Hour

// CollectGarbage deletes the table's files that the committed version
// (m, whose staged metadata file is stagedKey) does not reference and
// that were written more than grace before now: the data files,
// manifests, manifest lists and staged metadata of rounds that were cut
// short or lost their commit, and the staged metadata of versions
// published since. Committed versions' metadata files
// (v<N>.metadata.json) and version-hint.text stay. It returns how many
// objects it deleted.
func (t *Table) CollectGarbage(ctx context.Context, m *Metadata, stagedKey string, now time.Time, grace time.Duration) (int, error) {
	keep := map[string]bool{stagedKey: true}
	for _, s := range m.Snapshots {
		lkey, ok := t.key(s.ManifestList)
		if !ok {
			return 0, fmt.Errorf("%w: manifest list %s is not in %s", ErrInvalidMetadata, s.ManifestList, t.store)
		}
		keep[lkey] = true
		manifests, err := t.ReadManifestList(ctx, s.ManifestList)
		if err != nil {
			return 0, err
		}
		for _, mf := range manifests {
			mkey, ok := t.key(mf.Path)
			if !ok || keep[mkey] {
				continue // listed by an earlier snapshot too
			}
			keep[mkey] = true
			entries, err := t.ReadManifest(ctx, mf.Path)
			if err != nil {
				return 0, err
			}
			for _, e := range entries {
				if dkey, ok := t.key(e.File.Path); ok {
					keep[dkey] = true
				}
			}
		}
	}
	var doomed []string
	err := t.store.List(ctx, t.prefix+"/", func(oi tiering.ObjectInfo) error {
		name := oi.Key[strings.LastIndexByte(oi.Key, '/')+1:]
		published := strings.HasPrefix(oi.Key, t.prefix+"/metadata/") && (name == "version-hint.text" || isVersionFile(name))
		if !keep[oi.Key] && !published && now.Sub(oi.Modified) > grace {
			doomed = append(doomed, oi.Key)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("lake: list %s: %w", t.prefix, err)
	}
	deleted := 0
	for deleted < len(doomed) {
		n := min(len(doomed)-deleted, 1000)
		if err := t.store.Delete(ctx, doomed[deleted:deleted+n]...); err != nil {
			return deleted, fmt.Errorf("lake: delete garbage: %w", err)
		}
		deleted += n
	}
	return deleted, nil
}

// isVersionFile reports whether name is a committed version's metadata
// file, v<N>.metadata.json.
func isVersionFile(name string) bool {
	n, ok := strings.CutSuffix(name, ".metadata.json")
	if !ok || len(n) < 2 || n[0] != 'v' {
		return false
	}
	for _, c := range n[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
