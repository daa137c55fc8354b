package logstore

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// manualScheduler is a scheduler on a fake clock whose ticks the test
// runs itself (runDue), on the test's goroutine.
func manualScheduler(t *testing.T, clock *fakeClock) *Scheduler {
	t.Helper()
	s, err := newScheduler(SchedulerConfig{Now: clock.Now}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// manualLog opens a log (cfg without Dir) on a manual scheduler of its
// own, on a fake clock.
func manualLog(t *testing.T, cfg Config) (*Log, *Scheduler, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s := manualScheduler(t, clock)
	cfg.Dir, cfg.Now, cfg.Scheduler = t.TempDir(), clock.Now, s
	return openLog(t, cfg), s, clock
}

// pending lists the deadlines of the jobs scheduled, earliest first.
func (s *Scheduler) pending() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, j := range s.due {
		out = append(out, j.at)
	}
	return out
}

// tasksPending reports which of the log's tasks have a deadline.
func (l *Log) tasksPending() []logTask {
	l.tasksMu.Lock()
	defer l.tasksMu.Unlock()
	var out []logTask
	for t, at := range l.taskDue {
		if !at.IsZero() {
			out = append(out, logTask(t))
		}
	}
	return out
}

func TestSchedulerDeadlines(t *testing.T) {
	clock := newFakeClock()
	s := manualScheduler(t, clock)
	var runs []string
	a := s.register(func(time.Time) { runs = append(runs, "a") })
	b := s.register(func(time.Time) { runs = append(runs, "b") })
	start := clock.Now()
	a.wakeAt(start.Add(2 * time.Second))
	b.wakeAt(start.Add(3 * time.Second))
	b.wakeAt(start.Add(time.Second)) // the earlier deadline wins
	b.wakeAt(start.Add(5 * time.Second))

	s.runDue()
	if len(runs) != 0 {
		t.Fatalf("ran %v before any deadline", runs)
	}
	clock.Advance(time.Second)
	s.runDue()
	clock.Advance(time.Second)
	s.runDue()
	if fmt.Sprint(runs) != "[b a]" {
		t.Fatalf("runs %v, want [b a]: b once at 1 s, a at 2 s", runs)
	}
	clock.Advance(time.Hour)
	s.runDue()
	if len(runs) != 2 || len(s.pending()) != 0 {
		t.Fatalf("a job ran again without asking: %v, pending %v", runs, s.pending())
	}

	a.wakeAt(clock.Now())
	a.stop()
	s.runDue()
	if len(runs) != 2 {
		t.Fatalf("a stopped job ran: %v", runs)
	}
	a.wakeAt(clock.Now())
	if len(s.pending()) != 0 {
		t.Fatal("a stopped job was scheduled")
	}
}

// TestSchedulerRequeuesWakeDuringRun: a job that asks for a deadline while
// it runs (a log whose fsync arms its checkpoint) gets it.
func TestSchedulerRequeuesWakeDuringRun(t *testing.T) {
	clock := newFakeClock()
	s := manualScheduler(t, clock)
	runs := 0
	var j *job
	j = s.register(func(now time.Time) {
		runs++
		if runs == 1 {
			j.wakeAt(now.Add(time.Second))
		}
	})
	j.wakeAt(clock.Now())
	s.runDue()
	if p := s.pending(); runs != 1 || len(p) != 1 || !p[0].Equal(clock.Now().Add(time.Second)) {
		t.Fatalf("runs %d, pending %v", runs, p)
	}
	clock.Advance(time.Second)
	s.runDue()
	if runs != 2 || len(s.pending()) != 0 {
		t.Fatalf("runs %d, pending %v", runs, s.pending())
	}
}

// TestSchedulerWorkersAndStop: on the real timer, at most Workers jobs run
// at once, every due job runs, and stop waits for a run in progress and
// lets none start after it.
func TestSchedulerWorkersAndStop(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := make(chan struct{})
	var running, peak, done atomic.Int32
	started := make(chan *job, 5)
	jobs := make([]*job, 5)
	for i := range jobs {
		var j *job
		j = s.register(func(time.Time) {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			started <- j
			<-release
			running.Add(-1)
			done.Add(1)
		})
		jobs[i] = j
		j.wakeAt(time.Now())
	}
	first := <-started
	<-started
	stopped := make(chan struct{})
	go func() {
		first.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while its job was running")
	case <-started:
		t.Fatal("a third job started with two workers busy")
	default:
	}
	close(release)
	<-stopped
	for range 3 {
		<-started
	}
	waitFor(t, "every job to finish", func() bool { return done.Load() == 5 })
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d jobs ran at once with 2 workers", p)
	}
	first.wakeAt(time.Now())
	if len(s.pending()) != 0 {
		t.Fatal("a stopped job was scheduled")
	}
}

// TestIdleLogCostsNothing: a log with nothing pending has no deadline on
// its scheduler; a write arms exactly the work it needs, and once that ran,
// nothing is left.
func TestIdleLogCostsNothing(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			l, s, clock := manualLog(t, Config{Sync: p, SyncInterval: 100 * time.Millisecond, RecoveryPointInterval: time.Second})
			if got := l.tasksPending(); len(got) != 0 || len(s.pending()) != 0 {
				t.Fatalf("a fresh log has work pending: %v", got)
			}
			mustAppend(t, l, makeBatch(t, "a", 3, 40), 0)
			want := map[SyncPolicy]string{SyncAlways: "[4]", SyncInterval: "[0]", SyncNever: "[]"}[p]
			if got := fmt.Sprint(l.tasksPending()); got != want {
				t.Fatalf("after an append: pending tasks %s, want %s", got, want)
			}
			for range 3 {
				clock.Advance(time.Second)
				s.runDue()
			}
			if got := l.tasksPending(); len(got) != 0 || len(s.pending()) != 0 {
				t.Fatalf("work still pending once it ran: %v", got)
			}
			if p == SyncNever {
				return // nothing durable to checkpoint until Close
			}
			rp, err := l.readRecoveryPoint()
			if err != nil || rp.offset != 3 {
				t.Fatalf("recovery point %+v after the background work: %v", rp, err)
			}
		})
	}
}

// TestCheckpointWaitsForItsInterval: the recovery point is written
// RecoveryPointInterval after the durable position moved, not before.
func TestCheckpointWaitsForItsInterval(t *testing.T) {
	l, s, clock := manualLog(t, Config{RecoveryPointInterval: time.Second})
	mustAppend(t, l, makeBatch(t, "a", 3, 40), 0)
	clock.Advance(999 * time.Millisecond)
	mustAppend(t, l, makeBatch(t, "b", 3, 40), 0)
	s.runDue()
	if rp, _ := l.readRecoveryPoint(); rp.offset != 0 {
		t.Fatalf("checkpointed %d early", rp.offset)
	}
	clock.Advance(time.Millisecond)
	s.runDue()
	if rp, _ := l.readRecoveryPoint(); rp.offset != 6 {
		t.Fatalf("recovery point at %d, want 6 (both appends)", rp.offset)
	}
}

func TestRollByAgeInBackground(t *testing.T) {
	l, s, clock := manualLog(t, Config{SegmentMaxAge: time.Hour})
	mustAppend(t, l, makeBatch(t, "a", 1, 10), 0)
	clock.Advance(59 * time.Minute)
	s.runDue()
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("rolled early: %d segments", n)
	}
	clock.Advance(time.Minute)
	s.runDue()
	segs := l.Segments()
	if len(segs) != 2 || !segs[0].Sealed || segs[1].BaseOffset != 1 {
		t.Fatalf("segments an hour after the first batch, with no append: %+v", segs)
	}
	clock.Advance(2 * time.Hour)
	s.runDue()
	if n := len(l.Segments()); n != 2 {
		t.Fatalf("an empty active segment rolled: %d segments", n)
	}
}

func TestRetentionInBackground(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"age", Config{RetentionAge: time.Hour}},
		{"size", Config{RetentionBytes: 100 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.SegmentMaxBytes = 64 << 10
			l, s, clock := manualLog(t, cfg)
			for i := range 300 {
				mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), 0)
			}
			before := len(l.Segments())
			clock.Advance(DefaultRetentionCheck - time.Millisecond)
			s.runDue()
			if n := len(l.Segments()); n != before {
				t.Fatalf("retention ran before its check interval: %d → %d segments", before, n)
			}
			clock.Advance(2 * time.Hour)
			s.runDue()
			if n := len(l.Segments()); n >= before || l.StartOffset() == 0 {
				t.Fatalf("retention did not run in the background: %d → %d segments", before, n)
			}
		})
	}
}

// TestCloseDuringBackgroundWork: closing a log while its interval fsync
// runs waits for it; the log then does no background work, and the
// recovery point covers everything.
func TestCloseDuringBackgroundWork(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var once sync.Once
	inFsync, release := make(chan struct{}), make(chan struct{})
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, Sync: SyncInterval, SyncInterval: time.Millisecond, Scheduler: s,
		FsyncFault: func(int64) error {
			once.Do(func() {
				close(inFsync)
				<-release
			})
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, makeBatch(t, "a", 3, 40), 0)
	<-inFsync
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if len(s.pending()) != 0 {
		t.Fatalf("a closed log left deadlines: %v", s.pending())
	}
	buf, err := readCheckpoint(dir, recoveryPointFile)
	if err != nil {
		t.Fatal(err)
	}
	if rp, err := decodePosition(recoveryPointFile, buf); err != nil || rp.offset != 3 {
		t.Fatalf("recovery point after Close %+v: %v", rp, err)
	}
}

// TestSchedulerBoundsFsyncs: every segment fsync of the scheduler's logs
// holds one of its MaxSyncs tokens, so no more run at once, whatever the
// number of logs syncing.
func TestSchedulerBoundsFsyncs(t *testing.T) {
	sched, err := NewScheduler(SchedulerConfig{MaxSyncs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Close()
	var mu sync.Mutex
	held := map[int]int{} // tokens held during an fsync → count
	hook := func(int64) error {
		mu.Lock()
		held[len(sched.syncs)]++
		mu.Unlock()
		return nil
	}
	var wg sync.WaitGroup
	for i := range 8 {
		l := openLog(t, Config{Dir: filepath.Join(t.TempDir(), fmt.Sprint(i)), Scheduler: sched, FsyncFault: hook})
		wg.Go(func() {
			for range 20 {
				mustAppend(t, l, makeBatch(t, "x", 1, 100), 0)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(held) == 0 {
		t.Fatal("no fsync ran")
	}
	for tokens := range held {
		if tokens < 1 || tokens > 2 {
			t.Fatalf("an fsync ran with %d of the 2 tokens taken: %v", tokens, held)
		}
	}
}

// TestRetentionRunsWhenSegmentExpires: a sealed segment that a lowered
// log.ttl lets go a moment from now is deleted a millisecond after it
// expires, not RetentionCheckInterval (30 s) later; one due and still
// there is looked at again after the interval, not in a loop.
func TestRetentionRunsWhenSegmentExpires(t *testing.T) {
	l, s, clock := manualLog(t, Config{SegmentMaxBytes: 64 << 10})
	fillSegments(t, l, 3)
	clock.Advance(500 * time.Millisecond)
	l.SetAgeRetention(AgeRetention{RetentionAge: time.Second})
	s.runDue() // at once: nothing is a second old yet
	if got := l.StartOffset(); got != 0 {
		t.Fatalf("the log starts at %d before its segments expired", got)
	}
	l.tasksMu.Lock()
	due := l.taskDue[taskRetentionAge]
	l.tasksMu.Unlock()
	if wait := due.Sub(clock.Now()); wait <= 0 || wait > time.Second {
		t.Fatalf("retention armed %v from now; the oldest segment expires in about 500ms", wait)
	}
	clock.Advance(due.Sub(clock.Now()))
	s.runDue()
	if l.StartOffset() == 0 {
		t.Fatal("the expired segments are still there when retention was due")
	}
}

// TestRetentionRunsWhenSegmentExpiresDuringAPass: the next segment
// expiring while a retention pass runs (between the pass's clock reading
// and its arming the next) is looked at again at once, not taken for one
// the pass kept, which waits the check interval (30 s): CI's
// TestAlterLiveProperties waited 30 s for a node's third segment after
// log.ttl was lowered to 1s.
func TestRetentionRunsWhenSegmentExpiresDuringAPass(t *testing.T) {
	clock := newFakeClock()
	s := manualScheduler(t, clock)
	var ticking atomic.Bool // each reading of the log's clock advances it 1 ms
	now := func() time.Time {
		at := clock.Now()
		if ticking.Load() {
			clock.Advance(time.Millisecond)
		}
		return at
	}
	l := openLog(t, Config{Dir: t.TempDir(), SegmentMaxBytes: 64 << 10, Now: now, Scheduler: s})
	for i := range 3 { // three sealed segments, each a millisecond newer than the one before
		for n := len(l.Segments()); len(l.Segments()) == n; {
			mustAppend(t, l, makeBatch(t, fmt.Sprint(i), 1, 1000), 0)
		}
		clock.Advance(time.Millisecond)
	}
	segs := l.Segments()
	l.SetAgeRetention(AgeRetention{RetentionAge: time.Second})
	// The pass reads the clock when the first segment has expired and
	// the second not yet; it expires a millisecond later, as the pass
	// arms the next one.
	first := segs[0].MaxTimestamp
	clock.Advance(time.UnixMilli(first + 1001).Sub(clock.Now()))
	ticking.Store(true)
	s.runDue()
	ticking.Store(false)
	if got := l.StartOffset(); got != segs[1].BaseOffset {
		t.Fatalf("after the pass the log starts at %d, want %d (the first segment gone)", got, segs[1].BaseOffset)
	}
	l.tasksMu.Lock()
	due := l.taskDue[taskRetentionAge]
	l.tasksMu.Unlock()
	if wait := due.Sub(clock.Now()); wait > time.Second {
		t.Fatalf("retention armed %v from now for a segment that expired during the pass", wait)
	}
	clock.Advance(max(due.Sub(clock.Now()), 0))
	s.runDue()
	if got := l.StartOffset(); got <= segs[1].BaseOffset {
		t.Fatalf("the second segment, expired, is still there: the log starts at %d", got)
	}
}
