// Package raftmeta runs the metadata Raft group: hashicorp/raft with
// raft-boltdb as log and stable store, file snapshots, and the state machine
// of raftmeta/metastate over its own bbolt file.
//
// A [Node] is context-first: Propose, Barrier, VerifyLeader, Leader, voter
// changes and leadership transfer all take a context and return typed errors
// ([ErrNotLeader], [ErrUnknownOutcome], ...) that the transport maps to wire
// codes. The package knows nothing of the network: the caller hands it a
// raft.Transport (the server's one-port stream layer) and forwards writes
// that reach a follower.
//
// Files under Config.Dir:
//
//	raft.db      Raft log and stable store (term, vote), bbolt via raft-boltdb
//	snapshots/   Raft snapshots: copies of the state file
//	state.db     the metadata state, with the last applied index
//
// Because the state file records the last applied index in the same
// transaction as every change, a restart neither restores a snapshot nor
// re-applies what the file already holds: Raft replays the log after the
// last snapshot and the state machine skips entries at or below its index.
package raftmeta
