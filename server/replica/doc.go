// Package replica runs a tablet node's bucket replicas: it performs what the
// protocol core (package replication) decides for each bucket. The core
// holds the rules (roles and epochs, the ISR and its proposals, follower
// progress, the high watermark, when a write is acknowledged) and does no
// I/O; this package owns the I/O: the bucket's log, the leader's produce
// path (batch checks, writer idempotence, appends, waits for acks), the
// follower's fetcher (pull replication, truncation where the leader says
// the logs diverged), the ISR proposals sent to the controller, and the
// checkpoints (high watermark, writer-state snapshot).
//
// The Manager reconciles replicas to the committed metadata it is given
// (Apply): each bucket this node holds is handed its assignment (leader,
// epochs, replicas, ISR), and the core says whether this replica leads,
// follows or waits; dropped tables are closed and deleted. A partition of
// a partitioned table is a table to the replicas: its buckets are keyed by
// the partition's id and checked by its table's schema and properties (one
// parsed copy for all its partitions, tableMeta), and a dropped partition
// goes as a dropped table does. The KV side of primary-key tables lives
// behind the KV interfaces (package kvreplica).
//
// A replica whose log fails (an fsync or write error) goes out of service
// for good and reports it (Config.OnFail): see failure.go. Storage and
// core errors reach clients through one table of wire codes (wireerr.go).
//
// # Locks
//
// A goroutine holding one of these locks takes only locks further down
// the list:
//
//  1. A client write's turn (turns.go): a write waits for its turn before
//     it takes produceMu, and nothing holding a lock below waits for a
//     turn. The turn gate's own lock is held only inside the gate.
//  2. Replica.produceMu: every change to the replica's log content
//     (appends, truncations, a reset) and its writer state, in write
//     order. Only a follower fetch holds more than one replica's at once
//     (one per bucket of the answer, while their fsyncs run), and it takes
//     them in bucket order.
//  3. The KV side's locks (package kvreplica: applyMu, then bufMu), which
//     writes and truncations take under produceMu.
//  4. Manager.mu: the node's view of the metadata, its replicas and
//     fetchers.
//  5. Replica.mu: the protocol core and the replica's life (closed,
//     failed, damage, catch-up, waiting writes, background syncs).
//  6. Leaves, taken under any of the above and taking nothing after them:
//     Manager.chMu (the change signal), Manager.bgMu (starting background
//     work), hwCheckpoint.mu, the KV applier's queue.
//
// Every lock is released in the function that took it; where the holding
// passes on to the caller (a follower fetch's buckets stay locked until
// their fsyncs are done), the function returns the release function.
package replica
