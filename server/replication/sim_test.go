package replication

// The seeded simulation of one bucket's replication.
//
// What it models: 3–5 replicas of one bucket and 1–2 spare nodes, each
// replica a node running the real core (Bucket) over a simulated log (entries with epoch and bytes, a
// durable end and an unsynced tail, an epoch cache persisted when written
// and cut back on recovery, a high-watermark checkpoint); a controller
// with the metadata state machine's rules (registrations whose Raft index
// is the node epoch, a new incarnation leaving the ISR even as its last
// member, a re-registration raising the leader epoch of the buckets the node
// leads, elections only from the ISR in assignment order, AdjustIsr as a
// compare-and-set on the leader and both epochs with request-id dedupe,
// and moves of the replica set: started to any set of the nodes, the
// joining replicas fetching as learners, completed once the whole target
// is in the ISR (leadership moving to a target replica, the leader epoch
// raised whenever a replica leaves), or cancelled back to the original
// set; a node opens a replica when committed metadata lists it and
// deletes its log when it no longer does, and may be added again later
// with an empty log);
// acks=all producers; pipelined idempotent writers, each driving the
// client's sequencing rules (writeseq.Window) over one ordered connection
// per node, whose calls take their turn at the node as they arrive and are
// decided in turn order with the core and a real WriterTable
// (sim_writer_test.go); a network that delivers in any order, delays, drops
// and duplicates fetches, fetch answers, AdjustIsr requests and answers and
// metadata images, and loses, delays and reorders the writers' answers;
// and faults: crashes losing the unsynced tail, restarts whose core first
// sees a stale image, wiped disks (new incarnations), pauses, stalled
// write paths, broken writer connections, AdjustIsr timeouts (unknown
// outcomes) with late answers, re-registrations of running nodes, and
// gossip that suspects down, paused and now and then healthy nodes. Time
// is a simulated clock passed to Tick and friends.
//
// After every step it checks: no acknowledged write lost (every running
// ISR member, every leader of the epoch that first acknowledged it or a
// later one, and every replica whose high watermark passed it holds its
// bytes at its offset); no two replicas differ below both their high
// watermarks; one leader (one core run) per epoch; a high watermark never
// past the durable end and never back within a leader's epoch; epochs only
// grow (per run, and on the controller); every batch acknowledged to a
// writer holds its rows at the offsets named, no row or writer batch is
// committed twice in any log, and a writer's batches acknowledged under
// one writer id are in sequence order; and the core's own invariants (a
// panic is a failure).
//
// What it does not model: more than one bucket or table, the KV path,
// acks=0 and acks=1, unclean elections, the writer-state snapshot and the
// two-segment rebuild (a replica's writer table comes from its whole log),
// consumers, remote storage, Raft itself (the controller is one
// linearizable state machine that is always reachable; its failover is not
// simulated), partial fsyncs (a sync makes the whole written log durable),
// torn or corrupt batches, log start offsets above zero (no retention), and
// liveness (it checks safety, not progress; the statistics it logs show
// progress happens).
//
// Run: go test ./server/replication -run TestSimulation [-sim.seeds N]
// [-sim.first K]; replay one seed with its trace: -sim.seed S -v.

import (
	"cmp"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

var (
	simSeeds = flag.Int("sim.seeds", 1000, "number of simulation seeds to run")
	simFirst = flag.Uint64("sim.first", 1, "first simulation seed")
	simSeed  = flag.Uint64("sim.seed", 0, "replay this one seed (with -v: print its trace)")
)

// simRegressions are seeds past the default range that once broke a
// property; every run checks them too. A change to the simulation itself
// may send a seed down another path, so each bug also has a unit test.
var simRegressions = []uint64{
	16513, // a FENCED answer to a duplicated first attempt taken as a refusal
}

// simSteps is the length of one seeded run.
const simSteps = 2000

// simFailure is a broken property: the seed and step that broke it.
type simFailure struct {
	seed uint64
	step int
	err  error
}

func (f *simFailure) Error() string {
	return fmt.Sprintf("seed %d, step %d: %v\nreplay: go test ./server/replication -run TestSimulation -sim.seed %d -v", f.seed, f.step, f.err, f.seed)
}

// runSeed runs one seed to the end or to its first broken property.
// With traced, it returns the step trace.
func runSeed(seed uint64, traced bool) (stats simStats, trace string, fail *simFailure) {
	w := newSimWorld(seed, traced)
	defer func() {
		if r := recover(); r != nil {
			fail = &simFailure{seed: seed, step: w.step, err: fmt.Errorf("panic: %v", r)}
		}
		if w.trace != nil {
			trace = w.trace.String()
		}
	}()
	for w.step < simSteps {
		err := w.stepOnce()
		if err == nil {
			err = w.settleWrites()
		}
		if err == nil {
			err = w.check()
		}
		if err != nil {
			return w.stats, "", &simFailure{seed: seed, step: w.step, err: err}
		}
	}
	return w.stats, "", nil
}

func TestSimulation(t *testing.T) {
	if *simSeed != 0 {
		stats, trace, fail := runSeed(*simSeed, testing.Verbose())
		t.Log(trace)
		if fail != nil {
			t.Fatal(fail)
		}
		t.Logf("seed %d: %+v", *simSeed, stats)
		return
	}
	seeds := make(chan uint64)
	var (
		mu    sync.Mutex
		total simStats
		fails []*simFailure
		wg    sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for seed := range seeds {
				stats, _, fail := runSeed(seed, false)
				mu.Lock()
				total.add(stats)
				if fail != nil {
					fails = append(fails, fail)
				}
				mu.Unlock()
			}
		})
	}
	for i := range *simSeeds {
		seeds <- *simFirst + uint64(i)
	}
	for _, seed := range simRegressions {
		if seed < *simFirst || seed >= *simFirst+uint64(*simSeeds) {
			seeds <- seed
		}
	}
	close(seeds)
	wg.Wait()
	t.Logf("%d seeds from %d: %+v", *simSeeds, *simFirst, total)
	if total.acked == 0 {
		t.Fatal("no write was acknowledged in any seed: the simulation checks nothing")
	}
	if total.movesCompleted == 0 || total.movesCancelled == 0 || total.replicasDeleted == 0 || total.learnersInSync == 0 {
		t.Fatal("no move completed, none was cancelled, no replica was deleted or no learner entered the ISR: the moves' checks check nothing")
	}
	if total.writerAcked == 0 {
		t.Fatal("no writer's batch was acknowledged in any seed: the writers' checks check nothing")
	}
	slices.SortFunc(fails, func(a, b *simFailure) int { return cmp.Compare(a.seed, b.seed) })
	for i, f := range fails {
		if i == 3 {
			t.Errorf("and %d more failing seeds", len(fails)-3)
			break
		}
		if testing.Verbose() {
			_, trace, _ := runSeed(f.seed, true)
			t.Log(trace)
		}
		t.Error(f)
	}
}
