package replica

import (
	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/record"
)

// writersRemembered is how many recent batches per writer a bucket keeps
// to answer retries.
const writersRemembered = replication.WritersRemembered

// writerTable is the protocol core's writer table (replication.WriterTable,
// which decides) fed with the replica's batches and answering in wire
// errors; the caller serializes access (the replica's produce lock, or the
// follower path).
type writerTable struct {
	*replication.WriterTable
}

// writerState is a replica's writer table and where its snapshot on disk
// stands (writersnap.go); under Replica.produceMu.
type writerState struct {
	table *writerTable
	// saved is the log end the snapshot on disk was taken at, -1 when
	// there is none: an idle replica's snapshot is not written again.
	saved int64
}

// writerBatch is one remembered batch of a writer.
type writerBatch = replication.WriterBatch

func newWriterTable() *writerTable { return &writerTable{replication.NewWriterTable()} }

// check decides a batch: nil, nil → append it; a remembered batch → its
// retry, answer with the original offsets; an error → OUT_OF_ORDER_SEQUENCE
// (replication.WriterTable.Check). A batch without a writer is never
// checked.
func (t *writerTable) check(writerID int64, seq int32, pipelined bool) (*writerBatch, error) {
	if writerID == record.NoWriterID {
		return nil, nil
	}
	dup, err := t.Check(writerID, seq, pipelined)
	if err != nil {
		return nil, WireError(err)
	}
	return dup, nil
}

// record remembers an appended batch.
func (t *writerTable) record(b record.Batch) {
	if b.WriterID() == record.NoWriterID {
		return
	}
	t.Remember(b.WriterID(), writerBatch{Seq: b.BatchSequence(), Base: b.BaseOffset(), Last: b.LastOffset(),
		TimestampMs: b.CommitTimestamp()})
}
