package logstore

import (
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// Log is one replica's log. One writer appends (Append, AppendReplicated,
// Truncate serialize on an internal lock) while any number of readers read.
type Log struct {
	cfg    Config
	logger *slog.Logger

	// mu serializes everything that writes: appends, roll, truncation,
	// retention. Lock order: mu → cpMu → fsyncMu → syncMu; mu → tasksMu →
	// the scheduler's lock; the segment cache's lock → a segment's openMu.
	mu            sync.Mutex
	active        *segment
	writtenEnd    int64 // offset after the last written batch
	lastTimestamp int64 // largest commit timestamp stamped, ms
	epochs        *epochCache
	closed        bool
	bounds        RetentionBounds // see SetRetentionBounds

	// segs is the copy-on-write list of segments, ascending by base offset;
	// readers load it without locks.
	segs        atomic.Pointer[[]*segment]
	readableEnd atomic.Int64 // readers see offsets below this
	writtenPub  atomic.Int64 // offsets below this are wholly written (writtenEnd, published)
	logStart    atomic.Int64
	truncGen    atomic.Int64 // bumped by every truncation

	// opened is set once recovery is done, before any goroutine starts.
	opened bool

	// fsyncMu makes every segment fsync and the failure it may cause one
	// step (see syncSegment).
	fsyncMu sync.Mutex

	// Group commit state, under syncMu.
	syncMu   sync.Mutex
	syncCond *sync.Cond
	syncing  bool
	durable  logPosition
	// mark is the durable mark (durablemark.go), under syncMu; lostFrom
	// is where the batches its mark named and Open did not find begin, -1
	// when none were missing.
	mark     *durableMark
	lostFrom int64
	// failure, once set, fails the log for good (see Failed); stopped says
	// Close ran. Both wake every waiter.
	failure error
	stopped bool

	// cpMu orders recovery-point writes so a stale one never overwrites a
	// lower one written by a truncation.
	cpMu         sync.Mutex
	checkpointed logPosition
	// checkpointSynced says the checkpointed position is durable on disk,
	// not only in the page cache (see checkpointRecoveryPoint).
	checkpointSynced bool

	// sched runs the background work (background.go); ownSched says it is
	// the log's own, closed with it. tasksMu guards taskDue, the deadline
	// of each kind of background work (zero: none pending).
	sched    *Scheduler
	ownSched bool
	job      *job
	tasksMu  sync.Mutex
	taskDue  [numTasks]time.Time

	hooks hooks
}

// hooks are points where a test stops a log mid-operation to run
// something in the window it leaves; nil in production.
type hooks struct {
	// resetRenamed runs in Reset once the old segment files are renamed
	// away, before the new one is created.
	resetRenamed func()
}

// logPosition locates an offset on disk: the segment holding it and the byte
// position of that offset's batch in the segment.
type logPosition struct {
	segmentBase int64
	pos         int64
	offset      int64
}

// AppendInfo describes an appended batch.
type AppendInfo struct {
	BaseOffset int64
	LastOffset int64
	// Timestamp is the commit timestamp stamped on the batch (leader appends)
	// or the last batch's (replicated appends), in Unix milliseconds.
	Timestamp int64
}

// SegmentInfo describes a segment, for tools and metrics.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64
	Bytes        int64
	Sealed       bool
	MaxTimestamp int64 // ms; math.MinInt64 when empty
}

// Open opens the log in cfg.Dir, creating it if needed, and recovers it
// after a crash: see the package documentation.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, pkgerr.Errorf("logstore", "%w", err)
	}
	l := &Log{cfg: cfg, logger: cfg.Logger.With("log_dir", cfg.Dir), sched: cfg.Scheduler, bounds: noBounds, lostFrom: -1}
	if l.sched == nil {
		// A log on its own (a tool, a test) gets a scheduler of its own;
		// it holds no goroutine while the log is idle.
		var err error
		if l.sched, err = NewScheduler(SchedulerConfig{Workers: 1, Now: cfg.Now}); err != nil {
			return nil, err
		}
		l.ownSched = true
	}
	l.syncCond = sync.NewCond(&l.syncMu)
	if err := l.recover(); err != nil {
		l.releaseAll()
		return nil, err
	}
	l.opened = true
	l.job = l.sched.register(l.runTasks)
	l.mu.Lock()
	l.armOnOpenLocked()
	l.mu.Unlock()
	return l, nil
}

// Close fsyncs what was written, checkpoints the recovery point so the next
// Open scans nothing, and releases the files. Readers' outstanding Records
// stay valid until released. A failed log is closed without an fsync and
// without moving its recovery point: a second fsync after a failed one can
// succeed without writing what the first lost (see syncSegment), and Close
// returns the failure.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.job.stop() // waits for a task in progress; none starts after

	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.syncSegment(l.active, false)
	if err == nil {
		pos := logPosition{segmentBase: l.active.base, pos: l.active.size, offset: l.writtenEnd}
		l.publishDurableLocked(l.active, pos, l.truncGen.Load())
		err = l.writeRecoveryPoint()
	}
	l.syncMu.Lock()
	l.stopped = true
	l.syncCond.Broadcast()
	l.syncMu.Unlock()
	l.releaseAll()
	return err
}

// releaseAll closes every segment (readers keep the mappings they hold)
// and the log's own scheduler.
func (l *Log) releaseAll() {
	l.mark.close()
	if p := l.segs.Load(); p != nil {
		l.segs.Store(&[]*segment{})
		for _, s := range *p {
			s.close()
		}
	}
	if l.ownSched {
		l.sched.Close()
	}
}

// Dir is the log's folder.
func (l *Log) Dir() string { return l.cfg.Dir }

// StartOffset is the first offset the log holds.
func (l *Log) StartOffset() int64 { return l.logStart.Load() }

// EndOffset is the offset after the last batch readers can see: with
// SyncAlways the durable end (the LEO of the replication protocol),
// otherwise the written end.
func (l *Log) EndOffset() int64 { return l.readableEnd.Load() }

// WrittenEnd is the offset after the last wholly written batch, fsynced or
// not: the end a leader serves its followers from. Under SyncAlways it runs
// ahead of EndOffset until the next fsync; otherwise they are equal.
func (l *Log) WrittenEnd() int64 { return l.writtenPub.Load() }

// Size is the total bytes of all segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range *l.segs.Load() {
		n += s.readable.Load()
	}
	return n
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := *l.segs.Load()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		out[i] = SegmentInfo{BaseOffset: s.base, NextOffset: s.nextOffset, Bytes: s.size,
			Sealed: s.sealed, MaxTimestamp: s.index.maxTime()}
	}
	return out
}

// AssignEpoch records that leader epoch starts at the current end of the
// log. A new leader calls it before its first append; appends at a newer
// epoch assign it implicitly.
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.epochs.assign(epoch, l.writtenEnd)
}

// LatestEpoch is the newest leader epoch assigned to this log. It survives
// reopening, even after a crash that lost every batch of it or when it has
// none yet (its entry then starts at the log end); only Truncate at or below
// its start forgets it, as a follower does when its log diverged.
func (l *Log) LatestEpoch() (int32, bool) {
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// OldestEpoch is the oldest leader epoch the epoch cache holds: the one
// the log's first batch (or, empty, its next) belongs to. A leader answers
// a follower whose last epoch is older only with its start
// (replication.LeaderLog.OldestEpoch).
func (l *Log) OldestEpoch() (int32, bool) {
	l.epochs.mu.RLock()
	defer l.epochs.mu.RUnlock()
	if len(l.epochs.entries) == 0 {
		return 0, false
	}
	return l.epochs.entries[0].Epoch, true
}

// Epochs returns a copy of the epoch cache.
func (l *Log) Epochs() []EpochEntry { return l.epochs.snapshot() }

// EpochBefore is the epoch of the batch ending at offset (the latest epoch
// starting below it), -1 when none does: at the log's end, the epoch of
// its last batch, which a follower names in its fetches. An epoch a replica
// started as a leader and wrote nothing in is no evidence of divergence.
func (l *Log) EpochBefore(offset int64) int32 {
	l.epochs.mu.RLock()
	defer l.epochs.mu.RUnlock()
	for i := len(l.epochs.entries) - 1; i >= 0; i-- {
		if e := l.epochs.entries[i]; e.StartOffset < offset {
			return e.Epoch
		}
	}
	return -1
}

// EndOffsetForEpoch returns the largest epoch at most epoch that this log
// knows and the offset where it ends: the start of the next epoch, or the
// written end (WrittenEnd) for the latest one. ok is false when the log
// knows no such epoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (found int32, end int64, ok bool) {
	return l.epochs.endOffsetFor(epoch, l.WrittenEnd())
}

func (l *Log) publishSegments(segs []*segment) {
	l.segs.Store(&segs)
	if len(segs) > 0 {
		l.logStart.Store(segs[0].base)
	}
}

// segmentFor returns the segment whose range holds offset, or nil.
func segmentFor(segs []*segment, offset int64) (*segment, int) {
	lo, hi := 0, len(segs)
	for lo < hi {
		m := (lo + hi) / 2
		if segs[m].base <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil, -1
	}
	return segs[lo-1], lo - 1
}

func nowMillis(now func() time.Time) int64 { return now().UnixMilli() }
