package lake

import (
	"context"
	"fmt"

	"github.com/floedb/floe/storage/record"
)

// BucketScanner is a Source that also reads a primary-key bucket's rows as
// its leader's key store holds them: how a round rebuilds a bucket's lake
// after an unclean election (rebuildBucket).
type BucketScanner interface {
	// ScanBucket calls fn with every row of bucket b, page by page, each
	// in the schema version schemaID, and returns the log offsets the
	// first and the last page's view of the store covered (each page holds
	// its rows as they were just below its own). The pages come from one
	// leadership of the bucket; fn's row is valid until it returns.
	ScanBucket(ctx context.Context, b BucketRef, fn func(schemaID int32, row []byte) error) (first, last int64, err error)
}

// rebuildBucket writes a primary-key bucket's lake again from its
// leader's store. An unclean election's fence cut lowered the bucket's
// lake offset below what its lake holds: the lake's rows past the cut are
// of a history the log no longer has, and each key's row as of the cut is
// not in the lake any more (copy-on-write keeps only the latest). The new
// leader's store is the bucket's state in the new history, and its
// changelog from there on is in the log:
//
//  1. Its rows, scanned page by page (the pages' views of the store at
//     offsets first to last), go to a staging file, uncommitted.
//  2. The changelog from first to at least last is reduced to each key's
//     latest change.
//  3. The bucket's one file is written: the staged rows whose key no
//     change touched (their state is the same at every page's offset,
//     hence at the end: that of the last change below first), then the
//     changed keys' latest rows (deleted ones left out). That is the
//     bucket's state just below the changelog's end, as a round's
//     copy-on-write leaves it; the commit replaces every file the bucket
//     had.
//
// The changelog does not say at which offset an untouched row's key last
// changed, only that it was below first: those rows take the offsets
// just below first, in key order (first-k to first-1 for k rows; k is at
// most first, since each of those keys changed below it), so a bucket's
// __offset values stay distinct and ascending through its file, as
// readers of the lake seek them, and their __timestamp is the round's
// time. It returns ok false when the bucket must wait: the store's view
// is still below the cut, or the changelog does not yet reach the scan's
// last page.
func (r *Round) rebuildBucket(ctx context.Context, sc BucketScanner, src Source, ix *Index, b Offset, current record.Schema,
	ls Schema, spec PartitionSpec) (df *DataFile, gone []string, next int64, ok bool, err error) {
	bk := BucketKey{PhysicalID: b.Bucket.PhysicalID, Bucket: b.Bucket.Bucket}
	stage, err := NewFileBuilder(current, ls)
	if err != nil {
		return nil, nil, 0, false, err
	}
	var staged int64
	var upgraded []byte
	first, last, err := sc.ScanBucket(ctx, b.Bucket, func(schemaID int32, row []byte) error {
		var err error
		if row, err = upgradeRow(r.Schemas, r.CurrentID, current, schemaID, row, upgraded[:0]); err != nil {
			return err
		}
		if schemaID != r.CurrentID {
			upgraded = row
		}
		staged++
		return stage.Append(row, b.Bucket.Bucket, staged-1, r.NowMs)
	})
	if err != nil {
		return nil, nil, 0, false, fmt.Errorf("lake: scan bucket %d of %d: %w", bk.Bucket, bk.PhysicalID, err)
	}
	if first < b.Offset || last < first {
		return nil, nil, 0, false, nil // the store has not applied the new history up to the cut
	}
	changes, err := newPKChanges(current, r.Schemas)
	if err != nil {
		return nil, nil, 0, false, err
	}
	next = first
	for next < last {
		n, err := src.ReadBucket(ctx, b.Bucket, next, max(r.MaxRecords, 1), func(rec Record) error { return changes.add(rec, r.CurrentID) })
		if err != nil {
			return nil, nil, 0, false, fmt.Errorf("lake: read bucket %d of %d from %d: %w", bk.Bucket, bk.PhysicalID, next, err)
		}
		if n == next {
			return nil, nil, 0, false, nil // the committed log is not past the scan yet
		}
		next = n
	}
	// The staging file, beside the data files: no version lists it, and
	// it goes once the bucket's file is written (the garbage collection
	// takes it if the round dies first).
	var spans []FileSpan
	if staged > 0 {
		body, sdf, err := stage.Finish()
		if err != nil {
			return nil, nil, 0, false, err
		}
		key := r.Table.DataFileKey(spec, b.Bucket.Partition, "staging-"+dataFileName(bk, 0, staged))
		if _, err := r.Table.PutDataFile(ctx, key, body, sdf, b.Bucket.Partition); err != nil {
			return nil, nil, 0, false, err
		}
		defer func() { _ = r.Table.store.Delete(context.WithoutCancel(ctx), key) }()
		spans = []FileSpan{{Key: key, From: 0, Next: staged, Rows: staged, Size: int64(len(body))}}
	}
	var kept int64
	if err := r.Table.keepUnchanged(ctx, ls, spans, changes, func([]byte, int64, int64) error { kept++; return nil }); err != nil {
		return nil, nil, 0, false, err
	}
	if kept > first {
		// Each kept key changed below first, once at least.
		return nil, nil, 0, false, fmt.Errorf("lake: bucket %d of %d: %d rows untouched since offset %d", bk.Bucket, bk.PhysicalID, kept, first)
	}
	fb, err := NewFileBuilder(current, ls)
	if err != nil {
		return nil, nil, 0, false, err
	}
	at := first - kept
	err = r.Table.keepUnchanged(ctx, ls, spans, changes, func(row []byte, _, _ int64) error {
		at++
		return fb.Append(row, b.Bucket.Bucket, at-1, r.NowMs)
	})
	if err != nil {
		return nil, nil, 0, false, err
	}
	if err := appendChanged(fb, b.Bucket.Bucket, changes); err != nil {
		return nil, nil, 0, false, err
	}
	for _, s := range ix.Files(bk) {
		gone = append(gone, s.Key)
	}
	if fb.Rows() == 0 {
		return nil, gone, next, true, nil
	}
	body, f, err := fb.Finish()
	if err != nil {
		return nil, nil, 0, false, err
	}
	name := dataFileName(bk, 0, next)
	if f, err = r.Table.PutDataFile(ctx, r.Table.DataFileKey(spec, b.Bucket.Partition, name), body, f, b.Bucket.Partition); err != nil {
		return nil, nil, 0, false, err
	}
	return &f, gone, next, true, nil
}
