// Package logstore is one bucket replica's log: an ordered sequence of record
// batches on local disk, with the indexes, recovery, retention and
// leader-epoch bookkeeping that replication needs.
//
// # Files
//
// A log lives in one folder:
//
//	00000000000000000000.log        segment: batches laid end to end
//	00000000000000000000.index      sparse offset index of a sealed segment
//	00000000000000000000.timeindex  sparse time index of a sealed segment
//	recovery-point                  offset below which the log is known durable
//	leader-epoch                    leader epoch → first offset of that epoch
//	sync-failed                     last durable position of a failed log (rare)
//
// File names carry the segment's base offset, zero-padded to 20 digits. Only
// the last segment is active (appended to); the others are sealed.
//
// # Segments
//
// A segment file grows ahead of the write position in chunks (fallocate):
// 64 KiB first, then as large as the file already is, up to
// PreallocateBytes, so an idle log reserves little disk. Appends go through
// the file (pwrite); reads are slices of a read-only mapping (mmap,
// MAP_SHARED), handed out without copying. The active segment is mapped to
// the size it may grow to, a sealed one to its file.
//
// Files are opened on first use and closed again: the logs of a node share
// a [Scheduler], which bounds how many segments hold a descriptor and a
// mapping (MaxOpenSegments, least recently used closed first, by a CLOCK
// sweep). A segment with writes not yet fsynced is never closed, so every
// fsync goes through the descriptor that wrote. Every mapping is
// reference-counted: a reader's [Records] holds it until Release, so
// closing, retention or truncation never unmaps bytes a reader still sends.
//
// The bytes of a segment file past the log's write position are always zero
// (fresh preallocation, or zeroed by truncation): a recovery scan therefore
// stops at the end of what was written and never finds a stale batch that a
// truncation removed.
//
// Sealing a segment fsyncs it, trims the file to its data and writes its
// indexes (each ends with a CRC, and is rebuilt from the segment when missing
// or damaged), before the next segment file exists. So every segment but the
// last is complete and durable.
//
// # Durability
//
// With [SyncAlways] an append returns only after an fdatasync covering it:
// appenders that arrive while one fsync runs are covered together by the next
// (group commit). Across logs, the fsyncs of a node's logs run side by side,
// at most the Scheduler's MaxSyncs at once; a follower writes many buckets'
// batches first and waits for them together ([Log.AppendReplicatedPending]). Readers see only durable batches. [SyncInterval] fsyncs
// SyncInterval after a write and [SyncNever] leaves it to the kernel (and to
// segment roll and Close); with both, readers see batches as soon as they
// are written.
//
// # Background work
//
// A log has no goroutine or timer of its own. Its periodic work (the
// interval fsync, the recovery-point checkpoint, retention, roll by age)
// runs on the [Scheduler] in Config (one per node; a log without one makes
// its own), and is armed by the change that needs it: a write arms the
// interval fsync and a size-retention check, a moved durable position arms
// a checkpoint, a segment's first batch its roll by age, a new oldest
// sealed segment its expiry. A log with nothing pending costs nothing. The
// scheduler keeps the deadlines in a heap under one timer and runs due work
// on a few workers; Close deregisters the log and waits for its running
// task.
//
// # Recovery
//
// The recovery point says up to where the log was durable. It is written
// durably on roll, truncation and Close, and, to the page cache only,
// RecoveryPointInterval after the durable position moves (losing that
// copy in a crash only makes recovery start from an older point). Opening
// walks batch headers of the last segment up to it (cheap: one header per
// batch, no checksums) and verifies CRCs only past it, stopping at the
// first batch whose length or CRC is invalid (the end rule, segreader.go:
// a zero tail, a torn batch or a bad CRC, a [*TailError]; [SegmentReader]
// applies the same rule to a folder read-only, for floe log dump and log
// verify); the torn tail is cut off,
// and what it found past the recovery point is fsynced before the log
// counts it durable (a killed process leaves it in the page cache). Sealed segments
// are not opened: their size and index files describe them (an index is
// rebuilt from its segment when missing or damaged). A bad batch below the
// recovery point, or in a sealed segment when it is first read (a header,
// checksum or base offset that does not hold, or batches that do not end
// where the next segment begins), is reported as corruption and never
// truncated away by the log itself: a [*CorruptError] (matching [ErrCorrupt]) names the
// first damaged offset, and [Log.Truncate] to it works on the damaged log, so
// a replica can drop the damaged suffix and fetch it again from a peer.
// Reads check each batch's length, checksum and base offset (which the
// checksum does not cover) against the batch before it.
//
// A durable mark, the offset the log was durable to as of its last fsync,
// is rewritten in place after every fsync that moved it (durablemark.go);
// a log that opens ending before it lost batches it had made durable, and
// says so ([Log.LostTail]) instead of passing the loss off as a torn tail.
// A truncation or reset lowers the mark and fsyncs it before it cuts
// anything, so no power cut leaves a mark above what the disk still holds.
//
// # Leader epochs
//
// The epoch cache maps each leader epoch to the first offset written in it;
// it is persisted on change and truncated together with the log, and
// [Log.EndOffsetForEpoch] answers the question a follower asks before it
// truncates (KIP-101/KIP-279). Recovery keeps the newest epoch ever assigned
// ([Log.LatestEpoch]) even when a crash lost every batch of it: its entry
// moves down to the recovered end, while older epochs left without a batch
// go. Only an explicit [Log.Truncate] forgets the newest epoch.
//
// # Failure
//
// A failed fsync fails the log for good ([Log.Failed], [ErrSyncFailed]):
// Linux may drop the dirty pages of a failed fsync and report success to the
// next one, so nothing written after the last durable position may ever be
// called durable. The log refuses writes, Close neither fsyncs nor moves the
// recovery point, and a sync-failed file holding the last durable position
// makes the next Open cut the log back to it.
package logstore
