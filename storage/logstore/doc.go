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
// A segment file is preallocated in chunks (fallocate) up to the segment size
// and mapped read-only in full (mmap, MAP_SHARED). Appends go through the file
// (pwrite); reads are slices of the mapping, handed out without copying.
// Every segment is reference-counted: a reader's [Records] holds its segment
// until Release, so retention or truncation can unlink a file while a reader
// still sends bytes from it, and the mapping goes when the last reader does.
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
// (group commit). Readers see only durable batches. [SyncInterval] fsyncs on a
// timer and [SyncNever] leaves it to the kernel (and to segment roll and
// Close); with both, readers see batches as soon as they are written.
//
// # Recovery
//
// The recovery point (written on roll, on Close and periodically) says up to
// where the log was durable. Opening walks batch headers of the last segment
// up to it (cheap: one header per batch, no checksums) and verifies CRCs only
// past it, stopping at the first batch whose length or CRC is invalid; the
// torn tail is cut off. A bad batch below the recovery point, or in a sealed
// segment when it is read, is reported as corruption and never truncated
// away by the log itself: a [*CorruptError] (matching [ErrCorrupt]) names the
// first damaged offset, and [Log.Truncate] to it works on the damaged log, so
// a replica can drop the damaged suffix and fetch it again from a peer.
// Reads check each batch's length, checksum and base offset (which the
// checksum does not cover) against the batch before it.
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
