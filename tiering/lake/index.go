package lake

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// BucketKey names one bucket's records in the lake: the physical table
// (a table's id, or a partition's) and the bucket number.
type BucketKey struct {
	PhysicalID uint64
	Bucket     int32
}

// FileSpan is one data file of one bucket: its records, in offset order,
// at offsets from From to before Next (an offset in between may hold no
// record: a control batch of the log's).
type FileSpan struct {
	Key        string // the file's key in the store
	From, Next int64
	Rows, Size int64
}

// Index is what one committed version of a lake table holds, bucket by
// bucket: the data files of each, in offset order, and the offset below
// which the version holds its records (the snapshot's floe.log-offsets).
// A reader of the lake finds the file of an offset in it. It is
// immutable; ReadIndex of a later version reuses an earlier one's
// manifests (a manifest never changes once written).
type Index struct {
	MetadataKey string
	// Schema is the version's current schema: a table column's field is
	// the one at the column's position.
	Schema Schema

	files     map[BucketKey][]FileSpan
	ends      map[BucketKey]int64
	manifests map[string][]bucketFile // by manifest URI
}

type bucketFile struct {
	bucket BucketKey
	span   FileSpan
}

// ReadIndex reads the index of the version whose metadata file is
// metadataKey (a staged key the controller committed); prev, when not
// nil, is an earlier version's, whose manifests it takes instead of
// reading them again.
func (t *Table) ReadIndex(ctx context.Context, metadataKey string, prev *Index) (*Index, error) {
	if prev != nil && prev.MetadataKey == metadataKey {
		return prev, nil // a version's files never change
	}
	m, err := t.ReadStaged(ctx, metadataKey)
	if err != nil {
		return nil, err
	}
	return t.IndexOf(ctx, metadataKey, m, prev)
}

// IndexOf is ReadIndex of the version whose metadata file, at
// metadataKey, reads as m (which it does not change).
func (t *Table) IndexOf(ctx context.Context, metadataKey string, m *Metadata, prev *Index) (*Index, error) {
	if prev != nil && prev.MetadataKey == metadataKey {
		return prev, nil
	}
	ix := &Index{MetadataKey: metadataKey, files: map[BucketKey][]FileSpan{}, ends: map[BucketKey]int64{},
		manifests: map[string][]bucketFile{}}
	if s := m.CurrentSchema(); s != nil {
		ix.Schema = *s
	}
	cur := m.CurrentSnapshot()
	if cur == nil {
		return ix, nil
	}
	offsets, err := ParseLogOffsets(cur.Summary[SummaryLogOffsets])
	if err != nil {
		return nil, err
	}
	for k, end := range offsets {
		b, err := parseBucketKey(k)
		if err != nil {
			return nil, err
		}
		ix.ends[b] = end
	}
	list, err := t.ReadManifestList(ctx, cur.ManifestList)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, mf := range list {
		files, ok := []bucketFile(nil), false
		if prev != nil {
			files, ok = prev.manifests[mf.Path]
		}
		if !ok {
			if files, err = t.readManifestFiles(ctx, mf.Path); err != nil {
				return nil, err
			}
		}
		ix.manifests[mf.Path] = files
		for _, f := range files {
			if seen[f.span.Key] {
				continue
			}
			seen[f.span.Key] = true
			ix.files[f.bucket] = append(ix.files[f.bucket], f.span)
		}
	}
	for b, spans := range ix.files {
		slices.SortFunc(spans, func(x, y FileSpan) int { return compareInt64(x.From, y.From) })
		for i := 1; i < len(spans); i++ {
			if spans[i].From < spans[i-1].Next {
				return nil, fmt.Errorf("%w: bucket %d of %d: data files %s and %s overlap", ErrInvalidMetadata,
					b.Bucket, b.PhysicalID, spans[i-1].Key, spans[i].Key)
			}
		}
	}
	return ix, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readManifestFiles reads the live data files a manifest lists, each
// placed by its name (RunRound names a bucket's file
// "<physical id>-<bucket>-<from>-<next>-<uuid>.parquet").
func (t *Table) readManifestFiles(ctx context.Context, uri string) ([]bucketFile, error) {
	entries, err := t.ReadManifest(ctx, uri)
	if err != nil {
		return nil, err
	}
	out := make([]bucketFile, 0, len(entries))
	for _, e := range entries {
		if e.Status == statusDeleted {
			continue
		}
		key, ok := t.key(e.File.Path)
		if !ok {
			return nil, fmt.Errorf("%w: manifest %s lists %s, outside the table", ErrInvalidMetadata, uri, e.File.Path)
		}
		b, from, next, err := parseFileName(path.Base(key))
		if err != nil {
			return nil, fmt.Errorf("%w: manifest %s: %v", ErrInvalidMetadata, uri, err)
		}
		out = append(out, bucketFile{bucket: b, span: FileSpan{Key: key, From: from, Next: next, Rows: e.File.RecordCount, Size: e.File.SizeBytes}})
	}
	return out, nil
}

// dataFileName is the name RunRound gives a bucket's data file before
// its unique suffix.
func dataFileName(b BucketKey, from, next int64) string {
	return fmt.Sprintf("%d-%d-%d-%d", b.PhysicalID, b.Bucket, from, next)
}

// parseFileName reads the bucket and offsets out of a data file's name.
func parseFileName(name string) (BucketKey, int64, int64, error) {
	parts := strings.SplitN(name, "-", 5)
	if len(parts) == 5 {
		phys, err1 := strconv.ParseUint(parts[0], 10, 64)
		bucket, err2 := strconv.ParseInt(parts[1], 10, 32)
		from, err3 := strconv.ParseInt(parts[2], 10, 64)
		next, err4 := strconv.ParseInt(parts[3], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil && err4 == nil && bucket >= 0 && from >= 0 && next > from {
			return BucketKey{PhysicalID: phys, Bucket: int32(bucket)}, from, next, nil
		}
	}
	return BucketKey{}, 0, 0, fmt.Errorf("data file %q is not named as Floe names them", name)
}

func parseBucketKey(k string) (BucketKey, error) {
	p, b, _ := strings.Cut(k, "/")
	phys, err1 := strconv.ParseUint(p, 10, 64)
	bucket, err2 := strconv.ParseInt(b, 10, 32)
	if err1 != nil || err2 != nil || bucket < 0 {
		return BucketKey{}, fmt.Errorf("%w: %s key %q", ErrInvalidMetadata, SummaryLogOffsets, k)
	}
	return BucketKey{PhysicalID: phys, Bucket: int32(bucket)}, nil
}

// End is the offset below which the version holds the bucket's records;
// false when it holds none of them.
func (ix *Index) End(b BucketKey) (int64, bool) {
	if ix == nil {
		return 0, false
	}
	end, ok := ix.ends[b]
	return end, ok && len(ix.files[b]) > 0
}

// Start is the bucket's first offset in the lake; false when it has none.
func (ix *Index) Start(b BucketKey) (int64, bool) {
	spans := ix.files[b]
	if len(spans) == 0 {
		return 0, false
	}
	return spans[0].From, true
}

// Find returns the file holding the bucket's records from offset on: the
// one whose span has it, or the first after it when no file has it (the
// log lost those offsets before the lake was turned on, or they held no
// record). ErrNotInLake when the offset is below the bucket's first file
// or at or past the version's end.
func (ix *Index) Find(b BucketKey, offset int64) (FileSpan, error) {
	spans := ix.files[b]
	end, ok := ix.End(b)
	if !ok || offset >= end || offset < spans[0].From {
		return FileSpan{}, fmt.Errorf("%w: bucket %d of %d, offset %d", ErrNotInLake, b.Bucket, b.PhysicalID, offset)
	}
	i, _ := slices.BinarySearchFunc(spans, offset, func(s FileSpan, o int64) int { return compareInt64(s.Next, o+1) })
	if i == len(spans) {
		return FileSpan{}, fmt.Errorf("%w: bucket %d of %d, offset %d: past its last file", ErrNotInLake, b.Bucket, b.PhysicalID, offset)
	}
	return spans[i], nil
}

// Files is the bucket's data files, in offset order.
func (ix *Index) Files(b BucketKey) []FileSpan {
	if ix == nil {
		return nil
	}
	return ix.files[b]
}

// manifestFiles is the live data files a manifest of the version lists.
func (ix *Index) manifestFiles(uri string) []bucketFile {
	if ix == nil {
		return nil
	}
	return ix.manifests[uri]
}
