package tiering

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Object key layout under a cluster's root (its cluster id):
//
//	ROOT/t<table id>/b<bucket>/log/<base offset, 20 digits>-<upload epoch>.log
//	ROOT/t<table id>/b<bucket>/log/<base offset, 20 digits>-<upload epoch>.index
//	ROOT/t<table id>/b<bucket>/log/<base offset, 20 digits>-<upload epoch>.writers
//	ROOT/t<table id>/b<bucket>/manifest/<version, 20 digits>-<leader epoch>-<nonce>.json
//
// A segment's keys depend only on the bucket, its base offset and the
// epoch of the leader uploading it: a retried upload overwrites the same
// objects with the same bytes (one leader's sealed segment never changes),
// and two leaders never write the same key. A manifest's key is new for
// every write (the nonce), so a manifest once committed is never replaced
// under its key, even by a retry that raced the commit.

// bucketPrefix is the key prefix of one bucket's objects, ending in "/".
func bucketPrefix(root string, tableID uint64, bucket int32) string {
	return fmt.Sprintf("%s/t%d/b%d/", root, tableID, bucket)
}

// tablePrefix is the key prefix of one table's objects, ending in "/".
func tablePrefix(root string, tableID uint64) string {
	return fmt.Sprintf("%s/t%d/", root, tableID)
}

func segmentKeys(root string, tableID uint64, bucket int32, base int64, epoch int32) (data, index, writers string) {
	stem := fmt.Sprintf("%slog/%020d-%d", bucketPrefix(root, tableID, bucket), base, epoch)
	return stem + ".log", stem + ".index", stem + ".writers"
}

func manifestKey(root string, tableID uint64, bucket int32, version int64, epoch int32, nonce string) string {
	return fmt.Sprintf("%smanifest/%020d-%d-%s.json", bucketPrefix(root, tableID, bucket), version, epoch, nonce)
}

// objectKind is what an object under a bucket's prefix is.
type objectKind int

const (
	kindUnknown objectKind = iota
	kindSegment
	kindManifest
)

// parsedKey is what a bucket object's key says: its kind, the leader epoch
// that wrote it and, for a manifest, its version.
type parsedKey struct {
	kind    objectKind
	epoch   int32
	version int64
}

// parseBucketKey reads a key under bucketPrefix (rest is the part after
// it); a key in no known shape is kindUnknown.
func parseBucketKey(rest string) parsedKey {
	var a, b int64
	if name, ok := strings.CutPrefix(rest, "log/"); ok {
		stem, ok := strings.CutSuffix(name, ".log")
		if !ok {
			stem, ok = strings.CutSuffix(name, ".index")
		}
		if !ok {
			stem, ok = strings.CutSuffix(name, ".writers")
		}
		if n, err := fmt.Sscanf(stem, "%d-%d", &a, &b); ok && err == nil && n == 2 && b >= 0 && b <= math.MaxInt32 {
			return parsedKey{kind: kindSegment, epoch: int32(b)}
		}
		return parsedKey{}
	}
	if name, ok := strings.CutPrefix(rest, "manifest/"); ok {
		parts := strings.SplitN(strings.TrimSuffix(name, ".json"), "-", 3)
		if len(parts) == 3 && strings.HasSuffix(name, ".json") {
			v, err1 := strconv.ParseInt(parts[0], 10, 64)
			e, err2 := strconv.ParseInt(parts[1], 10, 32)
			if err1 == nil && err2 == nil && e >= 0 {
				return parsedKey{kind: kindManifest, epoch: int32(e), version: v}
			}
		}
	}
	return parsedKey{}
}
