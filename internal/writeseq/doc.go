// Package writeseq is the sequencing of one idempotent writer's batches of
// one bucket: which sequence each batch gets under which writer id, which
// batches may be sent now and whether each goes pipelined, what a call's
// outcome means for its batch (acknowledged, resent, re-sequenced under a
// new writer id, failed), and in which order batches complete. It is a
// pure state machine: no goroutines, no network, no clock (the time is
// passed in). client.bucketSender drives it with real write streams; the
// protocol core's simulation (server/replication) drives it with simulated
// ones.
//
// The rules (docs/replication.md, Writers 1-7), as Kafka's idempotent
// producer keeps them:
//
//   - A batch gets the next sequence of the window's writer id when it is
//     sequenced and keeps it on every resend. Batches complete in sequence
//     order (Writers 1).
//   - The first batch of a writer id goes alone: until one is
//     acknowledged, the bucket may not know the writer (Writers 2).
//   - A batch is sent pipelined when an earlier batch of its writer id is
//     not acknowledged (in flight, to be resent, or failed); a bucket with
//     no history of the writer refuses it, since the earlier one may land
//     after it (Writers 3).
//   - After a retriable failure the window recovers: it waits until no
//     call is out, then resends the oldest unanswered batch alone, after a
//     backoff, until one succeeds; then it pipelines again (Writers 4).
//   - OUT_OF_ORDER_SEQUENCE for a batch that was sent pipelined, or that is
//     not the oldest unanswered, is retriable: its predecessor had not been
//     decided. For the oldest unanswered batch after one of its writer id
//     failed, it proves the batch was not written (had the failed one been
//     written, this one would have been its successor): it and the batches
//     after it get a new writer id and are sent again. For a batch sent
//     with every predecessor acknowledged, the bucket lost the writer's
//     history: the batch fails with it, and the later ones (not written
//     either) get a new writer id (Writers 5).
//   - A batch that runs out of its delivery deadline fails with its outcome
//     unknown; when nothing follows it, the next batch starts a new writer
//     id (Writers 6).
//   - A call not answered within its timeout (plus a grace) is given up:
//     the caller breaks its stream and answers it TimedOut (Writers 7).
package writeseq
