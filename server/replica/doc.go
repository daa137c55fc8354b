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
// follows or waits; dropped tables are closed and deleted. The KV side of
// primary-key tables lives behind the KV interfaces (package kvreplica).
//
// A replica whose log fails (an fsync or write error) goes out of service
// for good and reports it (Config.OnFail): see failure.go. Storage and
// core errors reach clients through one table of wire codes (wireerr.go).
package replica
