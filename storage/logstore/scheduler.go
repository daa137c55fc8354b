package logstore

import (
	"container/heap"
	"fmt"
	"sync"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
)

// Defaults for the zero SchedulerConfig.
const (
	DefaultSchedulerWorkers = 4
	DefaultMaxOpenSegments  = 1024
	DefaultMaxSyncs         = 32
)

// SchedulerConfig configures a Scheduler. The zero value is usable.
type SchedulerConfig struct {
	// Workers bounds how many logs run their background work (an interval
	// fsync, a checkpoint, retention, an age roll) at once. Default 4.
	Workers int
	// MaxOpenSegments bounds the segment files the logs keep open (a file
	// descriptor and a mapping each); past it, the least recently used
	// segment is closed and opens again on its next read. A segment with
	// writes not yet fsynced stays open over the bound. Default 1024.
	MaxOpenSegments int
	// MaxSyncs bounds the segment fsyncs the logs run at once, leader
	// appends and follower fetches alike: a device takes a few dozen
	// concurrent fsyncs together (its file system's journal commits them
	// as a group), and hundreds at once go slower than that
	// (BenchmarkSyncMany). Default 32.
	MaxSyncs int
	// Now is the clock deadlines are kept in; nil is time.Now.
	Now func() time.Time
}

// Validate reports the first invalid field.
func (c *SchedulerConfig) Validate() error {
	if c.Workers < 0 || c.MaxOpenSegments < 0 || c.MaxSyncs < 0 {
		return pkgerr.Errorf("logstore", "scheduler config: negative limit")
	}
	return nil
}

func (c SchedulerConfig) withDefaults() SchedulerConfig {
	if c.Workers == 0 {
		c.Workers = DefaultSchedulerWorkers
	}
	if c.MaxOpenSegments == 0 {
		c.MaxOpenSegments = DefaultMaxOpenSegments
	}
	if c.MaxSyncs == 0 {
		c.MaxSyncs = DefaultMaxSyncs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Scheduler is what the logs of one node share: it runs their background
// work and bounds their open segment files (see segmentCache). Give the
// same one to every log of a node (Config.Scheduler) and close it after
// them.
//
// It keeps a heap of jobs ordered by their next deadline and one runtime
// timer armed at the earliest, rather than a ticker that walks every log:
// a log only has a deadline while it has work pending (written data to
// fsync or checkpoint, a segment to roll or expire), so an idle log costs
// no wake-up, syscall or scan at all, and 10,000 idle logs cost nothing
// either. The timer starts workers on demand (at most Workers, each
// exiting when nothing is due), so an idle scheduler holds no goroutine.
type Scheduler struct {
	cfg      SchedulerConfig
	segments *segmentCache
	// marks holds the logs' durable-mark files open (openMarkFiles).
	marks *markFiles
	// syncs holds a token per fsync running (MaxSyncs).
	syncs chan struct{}

	mu      sync.Mutex
	idle    *sync.Cond // broadcast when a job stops running
	due     jobHeap    // scheduled jobs, earliest first
	ready   []*job     // due jobs waiting for a worker, in deadline order
	workers int        // worker goroutines running
	timer   *time.Timer
	timerAt time.Time // the deadline the timer is armed for; zero: disarmed
	manual  bool      // tests: no timer or workers, runDue runs what is due
	closed  bool
	wg      sync.WaitGroup
}

// NewScheduler returns a scheduler with nothing to do yet.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	return newScheduler(cfg, false)
}

func newScheduler(cfg SchedulerConfig, manual bool) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{cfg: cfg, segments: newSegmentCache(cfg.MaxOpenSegments), marks: newMarkFiles(openMarkFiles), syncs: make(chan struct{}, cfg.MaxSyncs), manual: manual}
	s.idle = sync.NewCond(&s.mu)
	if !manual {
		s.timer = time.AfterFunc(time.Hour, s.fire)
		s.timer.Stop()
	}
	return s, nil
}

// Close stops running background work and waits for the jobs running now.
// Logs still open on it get no more background work; close them first.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	for _, j := range s.due {
		j.index = -1
	}
	s.due, s.ready = nil, nil
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Scheduler) now() time.Time { return s.cfg.Now() }

// job is one log's registration: run is called with the scheduler's time
// once the job's deadline passes, never twice at once, and never after stop
// returned.
type job struct {
	s       *Scheduler
	run     func(now time.Time)
	at      time.Time // next deadline; zero: none
	index   int       // in s.due; -1 when not there
	queued  bool      // in s.ready
	running bool
	stopped bool
}

// register adds a job with no deadline.
func (s *Scheduler) register(run func(now time.Time)) *job {
	return &job{s: s, run: run, index: -1}
}

// wakeAt asks for the job to run once at is reached; an earlier deadline
// already asked for stands.
func (j *job) wakeAt(at time.Time) {
	s := j.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.stopped || s.closed || j.queued || (!j.at.IsZero() && !at.Before(j.at)) {
		return
	}
	j.at = at
	if j.running {
		return // requeued when the run ends
	}
	if j.index >= 0 {
		heap.Fix(&s.due, j.index)
	} else {
		heap.Push(&s.due, j)
	}
	s.armLocked()
}

// stop deregisters the job and waits for a run in progress to end. Calls
// from the job's own run would wait for themselves: the log never does.
func (j *job) stop() {
	s := j.s
	s.mu.Lock()
	defer s.mu.Unlock()
	j.stopped = true
	if j.index >= 0 {
		heap.Remove(&s.due, j.index)
		s.armLocked()
	}
	if j.queued {
		for i, r := range s.ready {
			if r == j {
				s.ready = append(s.ready[:i], s.ready[i+1:]...)
				break
			}
		}
		j.queued = false
	}
	for j.running {
		s.idle.Wait()
	}
}

// armLocked points the timer at the earliest deadline.
func (s *Scheduler) armLocked() {
	if s.manual || s.closed {
		return
	}
	if len(s.due) == 0 {
		if !s.timerAt.IsZero() {
			s.timer.Stop()
			s.timerAt = time.Time{}
		}
		return
	}
	at := s.due[0].at
	if at.Equal(s.timerAt) {
		return
	}
	s.timerAt = at
	s.timer.Reset(max(at.Sub(s.now()), 0))
}

// fire runs on the runtime's timer goroutine: it moves what is due to the
// ready queue and starts workers for it.
func (s *Scheduler) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.timerAt = time.Time{}
	s.collectDueLocked(s.now())
	for s.workers < s.cfg.Workers && s.workers < len(s.ready) {
		s.workers++
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runReady(true)
		}()
	}
	s.armLocked()
}

// collectDueLocked moves every job whose deadline is at or before now from
// the heap to the ready queue.
func (s *Scheduler) collectDueLocked(now time.Time) {
	for len(s.due) > 0 && !s.due[0].at.After(now) {
		j := heap.Pop(&s.due).(*job)
		j.at, j.queued = time.Time{}, true
		s.ready = append(s.ready, j)
	}
}

// runReady runs ready jobs until none is left. A worker (worker true)
// then exits, giving its slot back.
func (s *Scheduler) runReady(worker bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.ready) > 0 && !s.closed {
		j := s.ready[0]
		s.ready = s.ready[1:]
		if !j.queued || j.running || j.index >= 0 {
			panic(fmt.Sprintf("logstore: ready job in state queued=%v running=%v index=%d", j.queued, j.running, j.index))
		}
		j.queued, j.running = false, true
		s.mu.Unlock()
		j.run(s.now())
		s.mu.Lock()
		j.running = false
		if !j.at.IsZero() && !j.stopped && !s.closed {
			heap.Push(&s.due, j) // it asked for a deadline while it ran
			s.armLocked()
		}
		s.idle.Broadcast()
	}
	if worker {
		s.workers--
	}
}

// runDue runs, on the caller's goroutine, every job due at the scheduler's
// time: the tick of a manual scheduler in tests.
func (s *Scheduler) runDue() {
	s.mu.Lock()
	s.collectDueLocked(s.now())
	s.mu.Unlock()
	s.runReady(false)
}

// jobHeap orders jobs by deadline (container/heap).
type jobHeap []*job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(a, b int) bool { return h[a].at.Before(h[b].at) }
func (h jobHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].index, h[b].index = a, b
}

func (h *jobHeap) Push(x any) {
	j := x.(*job)
	j.index = len(*h)
	*h = append(*h, j)
}

func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	j.index = -1
	return j
}
