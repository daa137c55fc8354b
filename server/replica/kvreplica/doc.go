// Package kvreplica is the KV side of a tablet node's primary-key bucket
// replicas: each replica's Badger store, the applier that keeps the store
// at the log replica's high watermark (on leaders and followers alike, so
// a new leader serves lookups at once), the leader's merge of upserts
// against a pre-write buffer of uncommitted rows, lookups with their read
// fences and barriers, and the node's value-log collector.
//
// The log replica (package replica) knows this package only through the
// replica.KVTables, replica.KVTable and replica.KV interfaces; this package
// knows the log replica only through Log. The changelog of every write goes
// through the log replica's write path (leadership, writer idempotence,
// acks), so a primary-key bucket replicates exactly like a log bucket.
package kvreplica
