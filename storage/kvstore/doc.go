// Package kvstore is the key-value state of a node's primary-key bucket
// replicas: one Badger database per node ([DB]) holding, for each replica,
// the latest row of every key and the log offset it covers ([Store]), and
// the merge engines that turn upserts and deletes into changelog records.
//
// # One database per node
//
// Every replica's store lives in the node's one Badger database, so a node
// runs one set of memtables, compactors, value log and files whatever its
// number of buckets: an idle bucket costs its keys on disk and nothing
// else, and opening the database replays Badger's own write-ahead tail
// once, not once per bucket. Each store's keys carry its [StoreID]; a
// dropped or moved replica's keys go with one DropPrefix ([DB.Drop]) that
// leaves the others alone, and [Store.Export] reads one store's rows alone
// (what a KV snapshot copies).
//
// # Key layout
//
// Every Badger key starts with the store's prefix: the byte 'b', then the
// table id and the bucket as unsigned varints (a prefix-free code, so no
// store's prefix starts another's). After it, one byte says what the key
// holds:
//
//	prefix | 'r' | primary key bytes   the current row of that key (value below)
//	prefix | 'm' | name                metadata; today only "applied_offset", an
//	                                   8-byte big-endian int64
//
// # Row values
//
// A table's rows change layout with ALTER TABLE ADD COLUMN, which does not
// rewrite them, so every stored row says its schema version. A row entry
// whose Badger UserMeta has bit 0 set (versionedRow) holds
//
//	schema id (int16, 2 bytes big-endian, the changelog batch's) | row (record row format)
//
// and a row entry without it holds the row alone: a legacy row, written by
// a build before ALTER TABLE, when a table had one schema version, so it
// is of the table's first version; reads give it LegacySchemaID, which the
// caller reads as that version. Nothing rewrites legacy rows: the next
// write of their key replaces them with versioned ones. The flag lives in
// the key's entry in the LSM, not in the value log, so telling the two
// kinds apart costs no read, and a row is never told by its layout.
//
// Every read hands out rows with their schema ids ([Row], [Packed],
// [Page]); the caller brings them to the version it answers in. The row
// cache keeps each row in the versioned form whatever its entry's kind.
//
// The applied offset is the log offset just after the last changelog record
// written to the store. It is written in the same Badger transaction as the
// rows of that record batch (see [Store.Apply]), so after a crash the rows
// and the offset always agree, and replay from the log resumes at
// [Store.AppliedOffset], skipping every record below it. Writes are not
// fsynced (the bucket logs are the durable copy): a crash loses a tail of
// the database's transactions, never part of one.
//
// Earlier builds kept one Badger database per replica in the replica's
// folder, its keys without the store prefix; [Store.ImportLegacy] moves
// such a store into the node's database, its rows as legacy rows.
//
// # Merge engines
//
// [Merge] is a pure function from (old row, update) to (changelog records,
// new row) under a [MergeEngine]: last row (the default), first row, or
// versioned. The leader runs it before appending the changelog to its log;
// followers and replay only [Store.Apply] the changelog.
//
// The package declares the interfaces it needs and imports no other storage
// package but storage/record.
package kvstore
