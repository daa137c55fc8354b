package tiering

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/floedb/floe/internal/pkgerr"
)

// List calls fn for the objects whose keys start with prefix, in key order
// (S3 lists in byte order of the whole key). Objects in the bucket whose
// names are no valid key below the store's prefix (a console's "folder/"
// marker) are passed over, as a folder store passes over such files.
func (s *S3) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := validatePrefix(prefix); err != nil {
		return err
	}
	// Stopping early must cancel the listing, or its goroutine lingers.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true})
	for obj := range objects {
		if obj.Err != nil {
			return pkgerr.Errorf("tiering", "s3 list %q: %w", prefix, obj.Err)
		}
		key, ok := strings.CutPrefix(obj.Key, s.prefix)
		if !ok || ValidateKey(key) != nil {
			continue
		}
		if err := fn(ObjectInfo{Key: key, Size: obj.Size, Modified: obj.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes the objects in batched requests (up to 1,000 keys each).
// Every key is checked before any request is sent. If the server fails to
// remove some (or a failed request stops the batches after it), the error
// counts them and carries the first failure.
func (s *S3) Delete(ctx context.Context, keys ...string) error {
	names := make([]string, 0, len(keys))
	for _, key := range keys {
		name, err := s.object(key)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	slices.Sort(names)
	names = slices.Compact(names) // a key twice in one request may be answered once
	if len(names) == 0 {
		return nil
	}
	results, err := s.client.RemoveObjectsWithIter(ctx, s.bucket, removals(names), minio.RemoveObjectsOptions{})
	if err != nil {
		return pkgerr.Errorf("tiering", "s3 delete: %w", err)
	}
	deleted := 0
	var first error
	for res := range results {
		switch {
		case res.Err == nil:
			deleted++
		case first == nil:
			first = fmt.Errorf("%s: %w", strings.TrimPrefix(res.ObjectName, s.prefix), res.Err)
		}
	}
	if deleted == len(names) {
		return nil
	}
	// A cancelled delete stops without a result for every key.
	first = cmp.Or(first, ctx.Err(), errors.New("no answer for them"))
	return pkgerr.Errorf("tiering", "s3 delete: %d of %d keys not deleted: %w", len(names)-deleted, len(names), first)
}

// removals yields the objects RemoveObjectsWithIter is to remove.
func removals(names []string) iter.Seq[minio.ObjectInfo] {
	return func(yield func(minio.ObjectInfo) bool) {
		for _, name := range names {
			if !yield(minio.ObjectInfo{Key: name}) {
				return
			}
		}
	}
}
