// Package metastate is Floe's metadata state machine: cluster id, nodes,
// databases, tables and bucket placement, changed only by pb.Command
// entries of the metadata Raft log and stored in a bbolt file of its own.
//
// The package is pure: no Raft, no network, no clock. Everything that
// depends on time comes in as arguments (the Raft append time of each
// entry), so every replica that applies the same log holds the same bytes.
//
// # Applying
//
// Apply runs one command in one bbolt write transaction that also stores the
// Raft index as the applied index. The idempotence rules:
//
//   - An index at or below the applied index is a no-op: a restart, or a
//     snapshot newer than Raft thinks, replays entries already in the file.
//     The caller gets the result remembered for the command's request id,
//     else INTERNAL "already applied".
//   - A non-empty request id (at most MaxRequestIDBytes) is remembered with
//     its result, successes and refusals alike. The same id again, appended
//     at most RequestRetention after the first was, gets the first result
//     and changes nothing but the applied index: a client retrying after an
//     unknown outcome never applies a command twice.
//   - Every Apply forgets at most 64 of the oldest request ids: those past
//     RequestRetention at the entry's append time, and the oldest beyond
//     MaxRequests. The work is bounded and the same on every replica.
//   - A refused command changes nothing: what it wrote is rolled back and
//     only the refusal, the request id and the applied index commit.
//   - Data that does not decode gives INTERNAL and the applied index moves
//     on; the state machine never stops on bad input. Only a failure of this
//     replica's file (a commit error, a corrupt record, ErrCorrupt) stops
//     Apply until the state is reopened or restored.
//
// # bbolt layout
//
// Integers are big-endian, so keys sort numerically; records are
// deterministic protobuf encodings of the transport/pb messages.
//
//	meta            format            uint64 layout version (1)
//	                applied_index     uint64 Raft index of the last Apply
//	                cluster_id        the cluster id, raw bytes
//	                last_database_id  uint64 counter, first id 1
//	                last_table_id     uint64 counter, first id 1
//	                last_writer_id    uint64 counter, first id 1
//	                request_count     uint64 entries in requests
//	nodes           node id (uint32)                     → NodeRecord
//	databases       database name                        → DatabaseRecord
//	tables          database id (uint64) + table name    → TableRecord
//	buckets         table id (uint64) + bucket (uint32)  → BucketRecord
//	requests        request id → applied-at ms (uint64, sign bit flipped)
//	                             + index (uint64) + CommandResult
//	request_order   applied-at ms (sign bit flipped) + index → request id
//
// request_order lists the remembered request ids oldest first for pruning;
// its key is the first 16 bytes of the requests value it points at.
//
// # Leaders and ISRs
//
// A new table's bucket is led by its first replica (the second when the
// first is draining) at leader epoch 0, with every replica in the ISR, at
// bucket epoch 0. Five commands change it,
// each raising the bucket epoch on every change and the leader epoch on
// every change of leader (and on a leader's restart); an ISR is kept in
// assignment order, and a leader is only ever chosen from the ISR, but by
// an operator's unclean election.
//
//   - AdjustIsr: the leader's compare-and-set of its ISR, FENCED unless it
//     names the current leader, leader epoch and bucket epoch, and FENCED
//     when a member it adds registered again after the node epoch the
//     leader saw in its fetches (KIP-903; a member without one is not
//     checked).
//   - FenceNodes: the controller's list of gone tablet nodes. Gone leaders
//     hand over to the first ISR member in assignment order that is not
//     gone, or the bucket goes offline (leader 0, ISR kept); gone followers
//     leave the ISR; an offline bucket with an ISR member back gets it as
//     leader. Idempotent: the same list again changes nothing.
//   - RegisterNode with a new incarnation (a wiped data folder): the node's
//     replicas are lost, so it leaves every ISR, even as the last member:
//     such a bucket is offline with an empty ISR, and no FenceNodes elects
//     a leader for it. A lost leader hands over to the next ISR member.
//     With its own incarnation (a restart) the node keeps its leaderships
//     under new leader epochs: it may have lost an unsynced tail that its
//     followers copied, and must not write other bytes under their epoch.
//   - ElectLeaders: an operator's election. Clean, the first live ISR
//     member leads; unclean, with no live ISR member, the first live
//     replica leads as the ISR's only member and unclean_elections counts it.
//   - DrainNode: an operator's drain of a tablet node before a planned stop.
//     Each bucket it leads goes to the first other live ISR member in
//     assignment order (ISR unchanged); one without such a member keeps its
//     leader and is reported. The node is marked draining until it
//     registers again (or a cancel): while marked, every election above
//     takes it only when no other replica may lead, so leaderships do not
//     come back to it before it stops, and no bucket goes offline for it.
//   - RemoveNode: an operator's removal of a node gone for good. Refused
//     while it is live, or is a bucket's only ISR member or only replica;
//     otherwise its registration is deleted and it leaves every replica list
//     and ISR, a bucket it led going to the first other live ISR member (or
//     offline with its ISR, until fencing brings a member back).
//
// # Remote logs
//
// A bucket's record holds a handle to its remote log (pb.RemoteLog: the
// manifest's object key, the offsets the remote segments hold, a version),
// never the segment list itself, so the metadata does not grow with a
// bucket's history. CommitRemoteLog replaces it: FENCED unless it comes
// from the current leader at its leader epoch and names the committed
// version it built on, so a deposed leader's upload is never committed
// and two commits never race; the remote end never moves back, nor the
// remote start. Leader and bucket epochs stay.
//
// A primary-key bucket's record also lists its committed KV snapshots
// (pb.KVSnapshot: manifest key, log offset, version), oldest first.
// CommitKVSnapshot appends one, FENCED unless from the current leader at
// its epoch and naming the list's version it built on (the newest's
// version: the index of the commit that appended it), never below the
// newest's offset, and drops the oldest down to the table's
// kv.snapshot.retained. A commit from a build before versions names none:
// it is applied as then while the newest has no version, FENCED after.
//
// # Lakes
//
// A lake-enabled table's record holds its lake (pb.LakeState: the Iceberg
// table's uuid and prefix, the committed version and its metadata file's
// key, the tiering tasks), and each of its buckets' records the offset the
// lake holds its records below (lake_offset). AssignLakeTasks, the
// controller's, sets the tasks: disjoint bucket ranges covering the
// table's buckets, each on a tablet node, a task whose node or range
// changes getting a new epoch, never one handed out before. CommitLake, a
// task's, moves the version by one and its buckets' lake offsets forward:
// FENCED unless the task is the node's at that epoch and the commit names
// the committed version, so a node that lost its task never commits and
// two tasks' commits never race (the loser reads the new version and
// commits on top of it).
//
// # Bucket index
//
// No command reads the whole catalog. What CreateTable, RegisterNode and
// FenceNodes would scan every bucket for, an index in memory answers: each
// node's replicas (by table, bucket numbers), each node's load (Place's
// input) and the offline buckets. It is derived from the bucket records,
// never stored (the file and its snapshots are as without it), built from
// the file by the first command that needs it after Open or Restore, and
// changed by each command's bucket writes once they commit. A command reads
// it before writing any bucket, so it sees the state before the command.
// RegisterNode visits the node's buckets; FenceNodes those of the gone
// nodes and the offline ones: a bucket of no gone node with a leader cannot
// change. An index that names a bucket the file lacks is ErrCorrupt: the
// replica stops rather than differ from the others.
//
// # Metadata feed
//
// Tablet nodes follow the metadata with WatchMetadata: Image is everything
// at one applied index; Changes lists, for every applied command after an
// index that changed nodes, tables or buckets, a pb.MetadataUpdate with the
// records it wrote and the tables it dropped. The updates live in memory
// only (MaxFeedUpdates, MaxFeedBytes), from the applied index at Open or
// Restore: a watcher further behind starts again from an Image.
// ImageFor and ChangesFor are the same for one tablet node: of the buckets,
// only those with the node among their replicas (read by the bucket index),
// and ChangesFor a bounded number of bytes at a time. A bucket's replicas
// never change once placed; a command that moves replicas must also reach
// the nodes it takes a bucket from. WaitApplied blocks until the applied
// index passes a given one.
//
// # Snapshots
//
// WriteSnapshot streams a consistent copy of the file from a read
// transaction; Restore writes a snapshot beside the file, syncs it, checks
// it, and renames it over the file while reads wait.
//
// # Placement
//
// Place assigns new buckets' replicas over the tablet nodes: least loaded
// first, leaders balanced, racks spread; its doc describes the algorithm.
package metastate
