// Package replication is the pure protocol core of one bucket's replica:
// its role, leader and bucket epochs, committed and proposed ISR, what the
// leader knows of each follower, the high watermark, what counts as caught
// up, and whether a write may be acknowledged. It does no I/O, starts no
// goroutine and reads no clock: every input is a method call with the time
// passed in, and every output is a value (a decision, or an Effects that
// says what the caller must now do: send an ISR change, wake waiting
// writes, truncate). server/replica drives it with real logs and RPCs; the
// tests here drive it through scenarios and a seeded simulation.
//
// The rules, numbered in docs/replication.md with the tests that check
// them, as this code enforces them:
//
//   - Epochs only grow. Metadata older than what the replica has seen (a
//     lower leader epoch, or a lower bucket epoch within one leader epoch)
//     changes nothing (tablet nodes 3).
//   - A leader's high watermark is the minimum durable end over the larger
//     of the committed and the proposed ISR, its own durable end included;
//     a follower counts only once it has fetched in the current leader
//     epoch. It never moves back within a leader epoch and never passes a
//     counted durable end (follower fetch 4 and 5).
//   - A proposed ISR change stays proposed until its outcome is known: a
//     definite answer from the controller, or a committed bucket epoch
//     above the one it was proposed at. An unknown outcome (timeout, lost
//     reply) is retried with the same proposal, so the same request id
//     (ISR changes 2).
//   - A follower is caught up when it fetches at or past the leader's end,
//     or at or past the leader's end as of its previous fetch (the leader
//     keeps writing under load: KIP-227's rule). One that has not been
//     caught up for ReplicaLagMax is proposed out of the ISR. One whose end
//     reaches both the high watermark and the start of the current leader
//     epoch is proposed in (KAFKA-7128: never one still below the epoch's
//     start, whose log may hold a tail the leader truncated) (ISR changes
//     1).
//   - acks=all is answered when the high watermark passes the write and
//     the committed ISR still has min.insync.replicas members; otherwise
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND (retriable; the write is committed)
//     (produce 4).
//   - A follower fetch with an older leader epoch is fenced, a newer one is
//     unknown to this (stale) leader; a follower whose last epoch ends
//     earlier on the leader is told where to truncate (KIP-320) (follower
//     fetch 2).
//   - Node epochs (registration indexes): metadata as of an index below the
//     node's registration is ignored; a fetch with an older node epoch than
//     the leader saw from that follower is fenced, a newer one restarts its
//     progress; proposals carry their members' node epochs so the
//     controller can refuse one registered again since (KIP-903). A replica
//     neither leads an epoch its log held before it opened nor follows one
//     older than its log's newest (tablet nodes 1 and 3, ISR changes 1).
//
// Invariants are checked at every transition; a broken one panics, since
// it means acknowledged data may be lost and nothing after it can be
// trusted.
package replication
