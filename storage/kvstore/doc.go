// Package kvstore is the key-value state of one primary-key bucket replica:
// a Badger database holding the latest row of every key, the log offset it
// covers, and the merge engines that turn upserts and deletes into
// changelog records.
//
// # Key layout
//
// Every Badger key starts with a one-byte namespace:
//
//	'r' | primary key bytes   the current row of that key (record row format)
//	'm' | name                metadata; today only "applied_offset", an
//	                          8-byte big-endian int64
//
// The applied offset is the log offset just after the last changelog record
// written to the store. It is written in the same Badger transaction as the
// rows of that record batch (see [Store.Apply]), so after a crash the rows
// and the offset always agree, and replay from the log resumes at
// [Store.AppliedOffset], skipping every record below it.
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
