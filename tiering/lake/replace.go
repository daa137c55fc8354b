package lake

import (
	"context"
	"fmt"
	"strconv"
)

// StageReplace writes a snapshot that replaces data files of base (the
// committed version baseVersion, indexed by ix): the files keyed removed
// leave the table and files join it, as a primary-key table's round
// rewrites the buckets it changed (copy-on-write). The manifests that
// list a removed file are folded into the snapshot's one new manifest,
// with their other files as EXISTING and the removed ones as DELETED; the
// others are kept as they are. Like StageAppend, it changes base into
// the new version's metadata, and nothing a reader follows changes until
// Publish.
func (t *Table) StageReplace(ctx context.Context, base *Metadata, ix *Index, baseVersion int, create func() (*Metadata, error),
	removed []string, files []DataFile, summary map[string]string, nowMs int64) (*Staged, error) {
	m, err := t.next(base, create)
	if err != nil {
		return nil, err
	}
	gone := map[string]bool{}
	for _, k := range removed {
		gone[k] = true
	}
	var listed []ManifestFile
	if cur := m.CurrentSnapshot(); cur != nil {
		if listed, err = t.ReadManifestList(ctx, cur.ManifestList); err != nil {
			return nil, err
		}
	}
	if len(gone) > 0 && ix == nil {
		return nil, fmt.Errorf("lake: removing %d files needs the index of the version they are in", len(gone))
	}
	snapID := newSnapshotID()
	seq := m.LastSequenceNumber + 1
	spec := m.Spec()
	types, err := m.specTypes(spec)
	if err != nil {
		return nil, err
	}
	var kept []ManifestFile
	var entries []ManifestEntry
	var deletedRows int64
	found := 0
	for _, mf := range listed {
		touched := false
		for _, f := range ix.manifestFiles(mf.Path) {
			if gone[f.span.Key] {
				touched = true
			}
		}
		if !touched {
			kept = append(kept, mf)
			continue
		}
		old, err := t.ReadManifest(ctx, mf.Path)
		if err != nil {
			return nil, err
		}
		for _, e := range old {
			if e.Status == statusDeleted {
				continue // gone before; this snapshot no longer says so
			}
			if e.SequenceNumber == 0 {
				e.SequenceNumber = mf.SequenceNumber // inherited from the list
			}
			if e.File.Partition, err = partitionOf(spec, types, e.File.PartitionByName); err != nil {
				return nil, fmt.Errorf("lake: manifest %s: %w", mf.Path, err)
			}
			key, _ := t.key(e.File.Path)
			if gone[key] {
				found++
				deletedRows += e.File.RecordCount
				e.Status, e.SnapshotID = statusDeleted, snapID
			} else {
				e.Status = statusExisting
			}
			entries = append(entries, e)
		}
	}
	if found != len(gone) {
		return nil, fmt.Errorf("%w: %d of the %d files to remove are not in the version", ErrInvalidMetadata, len(gone)-found, len(gone))
	}
	var addedRows int64
	for _, f := range files {
		entries = append(entries, ManifestEntry{Status: statusAdded, SnapshotID: snapID, File: f})
		addedRows += f.RecordCount
	}
	manifests := kept
	if len(entries) > 0 {
		mf, err := t.putEntries(ctx, m, snapID, seq, types, entries)
		if err != nil {
			return nil, err
		}
		manifests = append(manifests, mf)
	}
	sum := map[string]string{"operation": "overwrite", "added-data-files": strconv.Itoa(len(files)),
		"added-records": strconv.FormatInt(addedRows, 10), "deleted-data-files": strconv.Itoa(len(removed)),
		"deleted-records": strconv.FormatInt(deletedRows, 10)}
	for k, v := range summary {
		sum[k] = v
	}
	return t.stage(ctx, m, baseVersion, snapID, seq, manifests, sum, nowMs)
}

// partitionOf types a manifest entry's partition (by field name, as read
// back) as the spec's fields in order.
func partitionOf(spec PartitionSpec, types []string, byName map[string]any) ([]PartitionValue, error) {
	out := make([]PartitionValue, len(spec.Fields))
	for i, f := range spec.Fields {
		v := byName[f.Name]
		typed := v == nil
		switch types[i] {
		case "int", "date":
			_, ok := v.(int32)
			typed = typed || ok
		case "long":
			_, ok := v.(int64)
			typed = typed || ok
		case "string":
			_, ok := v.(string)
			typed = typed || ok
		}
		if !typed {
			return nil, fmt.Errorf("%w: partition field %s holds %T, not %s", ErrInvalidMetadata, f.Name, v, types[i])
		}
		out[i] = PartitionValue{Type: types[i], Value: v}
	}
	return out, nil
}
