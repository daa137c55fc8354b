// Package tablet is a node's tablet role: the bucket replicas
// (server/replica and its KV side, server/replica/kvreplica), the Tablet
// service over them (service.go), the metadata follower that feeds them
// what the meta nodes committed, from the node's registration on
// (metawatch.go), tiering of sealed segments (tiering.go) and KV snapshots
// (kvsnapshot.go).
//
// The node (package server) makes the role with New and what it needs in
// Deps (its connection pool, a way to reach the metadata leader, the
// cluster id, its goroutine group and stop), registers Service, and calls
// Start once the node is in a cluster and Close when it stops. The role
// knows nothing of the meta role.
package tablet
