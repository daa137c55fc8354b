// Package record defines what Floe stores and sends: record batches, the rows
// inside them, and the schemas that describe those rows.
//
// # Record batch
//
// A batch is the unit of append, replication, fetch and checksum. All integers
// are big-endian; the header is 53 bytes:
//
//	offset size field
//	 0      8   base offset        first record's offset, set by the leader
//	 8      4   length             bytes after this field (batch size = 12 + length)
//	12      1   magic              format version, currently 0
//	13      8   commit timestamp   milliseconds since the Unix epoch, set by the leader
//	21      4   leader epoch       epoch of the leader that appended the batch
//	25      4   CRC-32C            Castagnoli, over bytes [29, end)
//	29      2   schema id          schema version of the rows
//	31      2   attributes         bits 0-2 payload format, 3-5 compression, 6 append-only,
//	                               7 projected (fetch answers only)
//	33      4   last offset delta  record count - 1
//	37      8   writer id          idempotent writer, -1 when none
//	45      4   batch sequence     per writer and bucket, -1 when none
//	49      4   record count       at least 1
//	53      …   records            the payload, compressed as a whole when the
//	                               compression bits say so (never for Arrow)
//
// Payload formats (attribute bits 0-2): 0 rows, 1 raw, 2 control, 3 Arrow.
// Compressions (bits 3-5): 0 none, 1 zstd, 2 lz4 (Arrow only). For
// [PayloadArrow] the compression bits name the codec of the Arrow IPC body
// buffers, which are compressed one by one as Arrow's BodyCompression says,
// and the payload is never compressed as a whole: a server cuts columns out
// of it without decompressing. Its records are not laid out one after the
// other, so [Batch.Records] and [Codec.Decompress] refuse it
// ([ErrArrowPayload]); package storage/arrowlog reads and writes it under
// the schema the batch's schema id names.
//
// The fields the leader sets (base offset, commit timestamp, leader epoch) sit
// before the CRC, so stamping them never recomputes the checksum: a batch keeps
// the CRC its writer computed all the way to disk and to every reader.
//
// # Records
//
// In a row, raw or control payload each record is a change type byte, a uvarint length and that
// many bytes of data (a row in the compact row format for [PayloadRows]):
//
//	change type (1) | uvarint length | data
//
// A record's offset is the batch's base offset plus its index in the batch;
// its timestamp is the batch's commit timestamp.
//
// # Rows and schemas
//
// Schemas name typed, nullable columns and an optional primary key; rows use a
// compact binary codec with O(1) field access (see row.go), and convert to and
// from JSON objects with strict type checks.
package record
