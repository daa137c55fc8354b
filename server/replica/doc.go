// Package replica runs a tablet node's bucket replicas: one log per bucket
// replica, the leader's produce path (idempotence, high watermark, acks),
// the follower's fetcher (pull replication with epoch-based truncation), and
// the ISR upkeep a leader asks the controller for.
//
// The Manager reconciles replicas to the committed metadata it is given
// (Apply): for each bucket this node holds it is the leader at epoch E, a
// follower of leader L at epoch E, or offline; dropped tables are closed and
// deleted. The rules are PROTOCOL.md's:
//
//   - a leader refuses produce when it is not leader at its epoch, and with
//     acks=all when the ISR is below min.insync.replicas;
//   - high watermark = minimum durable end offset over the ISR (the larger
//     of the committed and the proposed one), never moving back, and only
//     advanced by followers that fetched in the current epoch;
//   - a follower fetch with an older epoch is FENCED, a newer one
//     UNKNOWN_LEADER_EPOCH; a follower whose last epoch ends earlier on the
//     leader is told where its log diverged and truncates there;
//   - a write waiting for acks=all fails NOT_LEADER when the replica stops
//     leading; a deposed leader cannot advance its high watermark, because
//     its followers have moved on.
package replica
