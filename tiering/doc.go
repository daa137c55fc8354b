// Package tiering moves what a bucket replica no longer needs close at hand
// to object storage: sealed log segments (the remote log a consumer reads
// from when it asks for offsets the local log has deleted) and the
// snapshots of a primary-key bucket's KV store (from which a new replica
// starts instead of replaying the whole changelog).
//
// # Object stores
//
// Everything remote goes through an [ObjectStore]. Two backends implement
// it:
//
//   - [S3] speaks the S3 API through minio-go, so it reaches AWS S3 and the
//     servers compatible with it (MinIO, Ceph RGW, versitygw, …). An
//     [S3Config] names the endpoint, the bucket and a key prefix inside it.
//   - [Folder] keeps each object as a file in a local folder (a mounted
//     network filesystem, or a single machine's disk in development).
//
// Both hold the same contract, which one test suite checks against each:
// an object is written whole or not at all (Put never leaves a partial
// object behind, even when its reader fails midway), reads take a byte
// range, listing is in key order, deleting what is not there is not an
// error, and a missing object is [ErrNotFound].
//
// # Keys
//
// Keys are slash-separated paths of printable ASCII, at most 1,024 bytes,
// whose parts are neither empty, "." nor ".." ([ValidateKey]); every method
// refuses other keys with [ErrInvalidKey]. Keys are ordered as S3 orders
// them, byte by byte over the whole key: "a-b" lists before "a/b", since
// '-' sorts below '/'. A list prefix is any start of a key ("", "seg",
// "seg/", "seg/0001").
//
// A folder store keeps the object "a/b" in the file a/b below its folder,
// so it cannot hold both "a/b" and "a/b/c" (a path is a file or a folder,
// not both), a pair S3 allows: Put refuses the second with
// [ErrKeyConflict]. Keys Floe builds never form such a pair.
package tiering
