// Package server wires a Floe node: configuration, the data folder's lock
// and identity, the one-port listener and DRPC server, the dial pool,
// discovery of peers through Hello (discovery.go), registration
// (register.go), gossip, HTTP (/healthz, /readyz, /metrics, pprof),
// readiness and Run/Close. The two roles live in their own packages and
// get what they need of the node through their Deps: server/meta (the
// metadata Raft group, the Meta service, the controller) and server/tablet
// (the bucket replicas, the Tablet service, following the metadata).
//
// A node starts its RPC server first (so peers can find it), then joins or
// forms the cluster (meta nodes; tablet-only nodes learn the cluster id
// from them), then registers itself in the metadata, then gossips and
// starts the controller (meta) and the replicas (tablet).
package server
