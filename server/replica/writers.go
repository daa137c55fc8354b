package replica

import (
	"math"

	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// writersRemembered is how many recent batches per writer a bucket keeps to
// answer retries.
const writersRemembered = 5

// writerBatch is one remembered batch of an idempotent writer.
type writerBatch struct {
	seq         int32
	base, last  int64
	timestampMs int64
}

// writerState is the recent history of one writer in one bucket.
type writerState struct {
	batches [writersRemembered]writerBatch
	n       int // batches remembered (≤ writersRemembered)
	next    int // ring position of the next batch
}

func (w *writerState) lastSeq() int32 {
	return w.batches[(w.next+writersRemembered-1)%writersRemembered].seq
}

// writerTable tracks idempotent writers of a bucket; the caller serializes
// access (the replica's produce lock, or the follower path).
type writerTable struct {
	writers map[int64]*writerState
}

func newWriterTable() *writerTable { return &writerTable{writers: map[int64]*writerState{}} }

// check decides a batch: nil, nil → append it; a remembered batch → its
// retry, answer with the original offsets; an error → out of sequence.
// A pipelined batch (its writer has an earlier one in the bucket not yet
// acknowledged) is taken only as the successor of the writer's last batch
// here: from a writer the bucket has no history of it is refused, since
// its predecessor may still be on the way and would then land after it.
func (t *writerTable) check(writerID int64, seq int32, pipelined bool) (*writerBatch, error) {
	if writerID == record.NoWriterID {
		return nil, nil
	}
	w := t.writers[writerID]
	if w == nil || w.n == 0 {
		if pipelined {
			return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE,
				"writer %d is new to the bucket and its batch %d follows one not acknowledged yet", writerID, seq)
		}
		return nil, nil // a writer new to this bucket (or whose history aged out)
	}
	last := w.lastSeq()
	if seq == nextSeq(last) {
		return nil, nil
	}
	for i := range w.n {
		if b := w.batches[i]; b.seq == seq {
			return &b, nil
		}
	}
	return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_OUT_OF_ORDER_SEQUENCE,
		"writer %d sent batch sequence %d, the bucket expects %d", writerID, seq, nextSeq(last))
}

// nextSeq is the sequence after seq: writers wrap from MaxInt32 to 0, as
// Kafka's idempotent producers do.
func nextSeq(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// record remembers an appended batch.
func (t *writerTable) record(b record.Batch) {
	if b.WriterID() == record.NoWriterID {
		return
	}
	t.remember(b.WriterID(), writerBatch{seq: b.BatchSequence(), base: b.BaseOffset(), last: b.LastOffset(), timestampMs: b.CommitTimestamp()})
}

// remember adds a writer's batch, the newest it has.
func (t *writerTable) remember(writerID int64, b writerBatch) {
	w := t.writers[writerID]
	if w == nil {
		w = &writerState{}
		t.writers[writerID] = w
	}
	w.batches[w.next] = b
	w.next = (w.next + 1) % writersRemembered
	w.n = min(w.n+1, writersRemembered)
}
