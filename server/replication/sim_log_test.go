package replication

import (
	"fmt"
	"slices"
)

// simEntry is one offset of a simulated log: the leader epoch that
// appended it and its bytes (a unique id per produced record).
type simEntry struct {
	epoch int32
	data  uint64
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
