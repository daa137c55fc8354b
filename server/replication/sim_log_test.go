package replication

import (
	"fmt"
	"slices"
)

// simEntry is one offset of a simulated log: the leader epoch that
// appended it and its bytes (a unique id per produced record); a writer's
// batch also carries the writer id and sequence, and the entry's place in
// it (pos of size). Entries of the plain producers have writer 0 and are
// batches of their own.
type simEntry struct {
	epoch     int32
	data      uint64
	writer    int64
	seq       int32
	pos, size int8
}

// endsBatch says whether the entry is the last of its batch.
func (e simEntry) endsBatch() bool { return e.pos+1 >= e.size }

// batchKey names a writer's batch.
type batchKey struct {
	writer int64
	seq    int32
}

// simEpoch is one epoch-cache entry: epoch starts at start.
type simEpoch struct {
	epoch int32
	start int64
}

// simLog is one replica's log as storage/logstore keeps it: entries, the
// durable end an fsync reached, an epoch cache that is persisted when
// written and cut back to the log on recovery, and a high-watermark
// checkpoint.
type simLog struct {
	entries      []simEntry
	synced       int64
	epochs       []simEpoch
	hwCheckpoint int64

	// What the checks found committed in it: below checkedTo, where each
	// row and each writer batch is.
	checkedTo int64
	rowAt     map[uint64]int64
	batchAt   map[batchKey]int64
}

func (l *simLog) end() int64 { return int64(len(l.entries)) }

// latestEpoch is the newest epoch of the epoch cache, -1 when empty (what
// a follower sends as its last fetched epoch, and what the core is told
// when it opens).
func (l *simLog) latestEpoch() int32 {
	if len(l.epochs) == 0 {
		return -1
	}
	return l.epochs[len(l.epochs)-1].epoch
}

// assignEpoch records that epoch starts at the log's end; the latest
// epoch again is a no-op and an older one an error, as in logstore.
func (l *simLog) assignEpoch(epoch int32) error {
	if latest := l.latestEpoch(); epoch <= latest {
		if epoch < latest {
			return fmt.Errorf("sim log: epoch %d assigned after %d", epoch, latest)
		}
		return nil
	}
	l.epochs = append(l.epochs, simEpoch{epoch: epoch, start: l.end()})
	return nil
}

// append writes entries unsynced; a newer epoch is assigned implicitly.
func (l *simLog) append(entries []simEntry) error {
	for _, e := range entries {
		if err := l.assignEpoch(e.epoch); err != nil {
			return err
		}
		l.entries = append(l.entries, e)
	}
	return nil
}

func (l *simLog) sync() { l.synced = l.end() }

// truncate cuts the log to end, and the epoch cache with it: epochs that
// start at or after end no longer hold a batch.
func (l *simLog) truncate(end int64) {
	l.entries = l.entries[:end]
	l.synced = min(l.synced, end)
	if end < l.checkedTo {
		l.checkedTo, l.rowAt, l.batchAt = 0, nil, nil
	}
	i := slices.IndexFunc(l.epochs, func(e simEpoch) bool { return e.start >= end })
	if i >= 0 {
		l.epochs = l.epochs[:i]
	}
}

// crash loses the unsynced tail, as a recovery from the last fsync does.
func (l *simLog) crash() { l.truncate(l.synced) }

// endOffsetFor answers the epoch cache like logstore's: the largest epoch at
// most epoch and where it ends (the next epoch's start, or the log end).
func (l *simLog) endOffsetFor(epoch int32) (int32, int64, bool) {
	n := len(l.epochs)
	if n == 0 || epoch < 0 {
		return 0, 0, false
	}
	if epoch == l.epochs[n-1].epoch {
		return epoch, l.end(), true
	}
	i := slices.IndexFunc(l.epochs, func(e simEpoch) bool { return e.epoch > epoch })
	switch i {
	case -1:
		return 0, 0, false
	case 0:
		return epoch, l.epochs[0].start, true
	}
	return l.epochs[i-1].epoch, l.epochs[i].start, true
}

// recovered is what the core is told of the log when it opens.
func (l *simLog) recovered() Log {
	return Log{HWCheckpoint: l.hwCheckpoint, DurableEnd: l.end(), LatestEpoch: l.latestEpoch()}
}

// record remembers the writer batches that end in entries, appended at
// offset first, as the replica records what it appends or fetches.
func record(t *WriterTable, entries []simEntry, first int64) {
	for i, e := range entries {
		if e.writer != 0 && e.endsBatch() {
			last := first + int64(i)
			t.Remember(e.writer, WriterBatch{Seq: e.seq, Base: last - int64(e.pos), Last: last})
		}
	}
}

// writerTable is what the log gives a replica that opens it or truncated
// it: every writer batch it holds, in log order.
func (l *simLog) writerTable() *WriterTable {
	t := NewWriterTable()
	record(t, l.entries, 0)
	return t
}

// checkCommitted checks the log below hw, which is committed: no row and
// no writer batch (writer id and sequence) is in it twice.
func (l *simLog) checkCommitted(hw int64) error {
	if l.rowAt == nil {
		l.rowAt, l.batchAt = map[uint64]int64{}, map[batchKey]int64{}
	}
	for ; l.checkedTo < hw; l.checkedTo++ {
		o, e := l.checkedTo, l.entries[l.checkedTo]
		if prev, ok := l.rowAt[e.data]; ok {
			return fmt.Errorf("row %d committed twice, at %d and %d", e.data, prev, o)
		}
		l.rowAt[e.data] = o
		if e.writer != 0 && e.pos == 0 {
			k := batchKey{e.writer, e.seq}
			if prev, ok := l.batchAt[k]; ok {
				return fmt.Errorf("batch %d/%d committed twice, at %d and %d", e.writer, e.seq, prev, o)
			}
			l.batchAt[k] = o
		}
	}
	return nil
}
