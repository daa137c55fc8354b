package replication

import (
	"fmt"
	"math"
)

// WritersRemembered is how many recent batches per writer a bucket keeps
// to answer retries (docs/replication.md, produce 2): the most a writer may
// have in flight at once.
const WritersRemembered = 5

// WriterBatch is one remembered batch of an idempotent writer: its
// sequence, offsets and commit timestamp.
type WriterBatch struct {
	Seq         int32
	Base, Last  int64
	TimestampMs int64
}

// writerState is the recent history of one writer in one bucket: a ring
// of its last batches.
type writerState struct {
	batches [WritersRemembered]WriterBatch
	n       int // batches remembered (≤ WritersRemembered)
	next    int // ring position of the next batch
}

func (w *writerState) lastSeq() int32 {
	return w.batches[(w.next+WritersRemembered-1)%WritersRemembered].Seq
}

// WriterTable decides the batches of a bucket's idempotent writers
// (produce 2 and 5): append, answer as a duplicate, or refuse as out of
// sequence. It does no I/O; the caller serializes access (the replica's
// produce lock, or the follower path) and records every batch its log
// takes, in log order.
type WriterTable struct {
	writers map[int64]*writerState
}

// NewWriterTable returns a table that knows no writer.
func NewWriterTable() *WriterTable { return &WriterTable{writers: map[int64]*writerState{}} }

// OutOfOrderError is a batch refused with ErrOutOfOrderSequence, with
// what the bucket knows of its writer.
type OutOfOrderError struct {
	WriterID int64
	Seq      int32
	// Expected is the sequence the bucket expects; meaningless when
	// Unknown.
	Expected int32
	// Unknown: the bucket has no history of the writer and the batch was
	// pipelined.
	Unknown bool
}

func (e *OutOfOrderError) Error() string {
	if e.Unknown {
		return fmt.Sprintf("writer %d is new to the bucket and its batch %d follows one not acknowledged yet", e.WriterID, e.Seq)
	}
	return fmt.Sprintf("writer %d sent batch sequence %d, the bucket expects %d", e.WriterID, e.Seq, e.Expected)
}

// Unwrap makes the error match ErrOutOfOrderSequence.
func (e *OutOfOrderError) Unwrap() error { return ErrOutOfOrderSequence }

// Check decides a batch of writerID with sequence seq: nil, nil → append
// it; a remembered batch → its retry, answer with the original offsets;
// an *OutOfOrderError → out of sequence. A pipelined batch (its writer
// has an earlier one in the bucket not yet acknowledged) is taken only as
// the successor of the writer's last batch here: from a writer the bucket
// has no history of it is refused, since its predecessor may still be on
// the way and would then land after it. A writer the bucket has no
// history of is otherwise accepted at any sequence (new, or its history
// aged out: the bucket cannot tell).
func (t *WriterTable) Check(writerID int64, seq int32, pipelined bool) (*WriterBatch, error) {
	w := t.writers[writerID]
	if w == nil || w.n == 0 {
		if pipelined {
			return nil, &OutOfOrderError{WriterID: writerID, Seq: seq, Unknown: true}
		}
		return nil, nil
	}
	last := w.lastSeq()
	if seq == NextSeq(last) {
		return nil, nil
	}
	for i := range w.n {
		if b := w.batches[i]; b.Seq == seq {
			return &b, nil
		}
	}
	return nil, &OutOfOrderError{WriterID: writerID, Seq: seq, Expected: NextSeq(last)}
}

// NextSeq is the sequence after seq: writers wrap from MaxInt32 to 0, as
// Kafka's idempotent producers do.
func NextSeq(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// Remember adds a writer's batch, the newest it has.
func (t *WriterTable) Remember(writerID int64, b WriterBatch) {
	w := t.writers[writerID]
	if w == nil {
		w = &writerState{}
		t.writers[writerID] = w
	}
	w.batches[w.next] = b
	w.next = (w.next + 1) % WritersRemembered
	w.n = min(w.n+1, WritersRemembered)
}

// Len is how many writers the table knows.
func (t *WriterTable) Len() int { return len(t.writers) }

// WriterHistory is one writer's remembered batches as a ring: Batches
// holds N of them, and Next is the ring position the next batch takes
// (so the newest is at Next-1). It is how a snapshot stores a writer.
type WriterHistory struct {
	WriterID int64
	Batches  [WritersRemembered]WriterBatch
	N, Next  int
}

// Histories calls fn with every writer's history, in no order.
func (t *WriterTable) Histories(fn func(WriterHistory)) {
	for id, w := range t.writers {
		fn(WriterHistory{WriterID: id, Batches: w.batches, N: w.n, Next: w.next})
	}
}

// Restore puts back a writer's history as Histories gave it; false when
// it is not a valid ring.
func (t *WriterTable) Restore(h WriterHistory) bool {
	if h.N < 0 || h.N > WritersRemembered || h.Next < 0 || h.Next >= WritersRemembered {
		return false
	}
	t.writers[h.WriterID] = &writerState{batches: h.Batches, n: h.N, next: h.Next}
	return true
}
