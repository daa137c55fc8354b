// Package client is Floe's Go SDK.
//
//	c, err := client.Connect(ctx, "127.0.0.1:7700", "127.0.0.1:7710")
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Admin().CreateDatabase(ctx, "shop", client.IfNotExists())
//	_, err = c.Admin().CreateTable(ctx, client.TableSpec{
//		Database: "shop", Name: "orders",
//		Schema:   "id BIGINT NOT NULL, item STRING, amount DECIMAL(10,2)",
//		PrimaryKey: []string{"id"},
//	})
//
// Every metadata call tries the given servers in turn and retries errors
// that say so (no leader yet, not the leader, unavailable) until its context
// ends. Writes carry a request id chosen once per call, so a retry after an
// unknown outcome is applied at most once.
//
// # Data
//
// Client.Table opens a table: its schema (rows are built with
// Table.NewRowEncoder or converted from JSON with Table.JSONCodec), its
// buckets and their leaders. From a Table:
//
//   - an AppendWriter appends rows to a log table. Rows go to
//     murmur3(bucket key) mod buckets, or, without a bucket key, fill one
//     bucket's batch at a time (sticky batching). Each bucket batches with a
//     size limit and a linger time and has one batch in flight; retriable
//     errors are retried with fresh metadata, and a writer id with per-bucket
//     batch sequences makes the retries idempotent. Memory is bounded: Append
//     blocks while the buffer is full.
//   - an UpsertWriter upserts and deletes rows of a primary-key table, with
//     the same batching, retries and idempotence; PartialColumns makes its
//     upserts partial updates.
//   - a Lookuper reads rows of a primary-key table by primary key (Lookup,
//     coalescing concurrent calls per bucket; LookupBatch) or by bucket key
//     (PrefixLookup), following leader changes.
//   - a LogScanner reads subscribed buckets from the earliest or latest
//     offset, an offset or a time, below the high watermark, following
//     leader changes; in a primary-key table that is the changelog, whose
//     control batches it passes over.
//   - a RowScanner reads every row of one bucket of a primary-key table
//     from its leader, a page at a time, in key order, following leader
//     changes: the table's current rows, bucket by bucket.
//
// See the package example.
package client
