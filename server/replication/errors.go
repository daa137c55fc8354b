package replication

import "github.com/floedb/floe/internal/pkgerr"

// Refusals. The replica maps them to wire codes (with its own detail);
// every one but ErrNotReplica, ErrOutOfRange and ErrOutOfOrderSequence
// is retriable.
var (
	// ErrNotLeader: this replica does not lead the bucket at the epoch the
	// request needs.
	ErrNotLeader = pkgerr.New("replication", "not the leader")
	// ErrNotEnoughReplicas: acks=all with a committed ISR smaller than
	// min.insync.replicas; nothing was appended.
	ErrNotEnoughReplicas = pkgerr.New("replication", "not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: the write committed below the high
	// watermark, but the ISR shrank below min.insync.replicas meanwhile;
	// its retry is answered as a duplicate once the ISR is back.
	ErrNotEnoughReplicasAfterAppend = pkgerr.New("replication", "not enough in-sync replicas after the append")
	// ErrFenced: a follower fetched with an older leader epoch.
	ErrFenced = pkgerr.New("replication", "fenced by a newer leader epoch")
	// ErrUnknownLeaderEpoch: a follower fetched with a newer leader epoch
	// than this leader knows; the leader is stale.
	ErrUnknownLeaderEpoch = pkgerr.New("replication", "unknown leader epoch")
	// ErrNotReplica: the fetching node is not an assigned replica.
	ErrNotReplica = pkgerr.New("replication", "not a replica of the bucket")
	// ErrOutOfOrderSequence: an idempotent writer's batch that is neither
	// the next of its writer nor a remembered one, or a pipelined batch of
	// a writer the bucket has no history of (WriterTable.Check; the
	// *OutOfOrderError says which). Retriable only as the writer's rules
	// say (docs/replication.md, Writers 5).
	ErrOutOfOrderSequence = pkgerr.New("replication", "out of order sequence")
	// ErrOutOfRange: an offset outside what the log holds.
	ErrOutOfRange = pkgerr.New("replication", "offset out of range")
)
