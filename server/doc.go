// Package server wires a Floe node: the one-port transport, the metadata
// Raft group for nodes with the meta role, the RPC services, and the
// tablet role (server/tablet) for nodes that host bucket replicas.
//
// A node starts its RPC server first (so peers can find it), then joins or
// forms the cluster (formation.go), then runs Raft and registers itself in
// the metadata. Writes that reach a follower are forwarded to the Raft
// leader; reads are answered by the leader after it confirms its
// leadership.
package server
