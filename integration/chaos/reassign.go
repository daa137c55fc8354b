package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

// The shape of reassign-under-faults.
const (
	// reassignNodes is its cluster: one node more than the tables'
	// replication (3), so every move takes a replica to the node that did
	// not hold it, and later moves bring replicas back to nodes that gave
	// theirs away (each of which starts again from an empty log).
	reassignNodes = 4
	// reassignMaxMoves bounds the moves running at once: two of the three
	// buckets, so a move of the third waits in the queue.
	reassignMaxMoves = 2
	// reassignThrottleBytesPerS is the move throttle half the starts set
	// (the others lift it): above what the log workload writes to a
	// bucket, so learners catch up, but slowly enough that faults land
	// while they do.
	reassignThrottleBytesPerS = 512 << 10
	// reassignStepInterval is how often the mover looks at the moves and
	// starts or cancels one.
	reassignStepInterval = 1500 * time.Millisecond
)

// reassignUnderFaults moves buckets' replicas at random (mover) while it
// SIGKILLs and restarts, or cuts off from the others, the metadata
// leader, a bucket leader or any node, one fault at a time.
func reassignUnderFaults(ctx context.Context, e *Env) error {
	if len(e.C.Nodes) <= 3 {
		return fmt.Errorf("chaos: moving replicas of 3 needs more than %d nodes", len(e.C.Nodes))
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	m := &mover{e: e, rng: rand.New(rand.NewPCG(e.Rng.Uint64(), e.Rng.Uint64()))}
	var moveErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		if moveErr = m.run(ctx); moveErr != nil {
			stop()
		}
	})
	faultErr := cycle(ctx, e, 4*time.Second, 3*time.Second, func() (func() error, error) { return nodeFault(ctx, e) })
	stop()
	wg.Wait()
	return errors.Join(moveErr, faultErr)
}

// nodeFault injects one fault of reassign-under-faults at a node drawn at
// random among the metadata leader, the leader of a log bucket and any
// node: SIGKILL it (undo: restart it), or cut it off from the other nodes
// both ways (undo: heal).
func nodeFault(ctx context.Context, e *Env) (func() error, error) {
	nd, role := e.C.Nodes[e.Rng.IntN(len(e.C.Nodes))], "a node"
	switch e.Rng.IntN(3) {
	case 0:
		if l, err := e.metaLeader(ctx); err == nil {
			nd, role = l, "metadata leader"
		}
	case 1:
		b := e.Rng.Int32N(e.Log.Buckets)
		if l, err := e.bucketLeader(ctx, b); err == nil {
			nd, role = l, fmt.Sprintf("bucket %d leader", b)
		}
	}
	if e.Rng.IntN(2) == 0 {
		e.H.Fault(fmt.Sprintf("kill node %d (%s)", nd.ID, role))
		nd.Kill()
		return func() error { e.H.Fault(fmt.Sprintf("restart node %d", nd.ID)); return nd.Restart() }, nil
	}
	e.H.Fault(fmt.Sprintf("isolate node %d (%s)", nd.ID, role))
	if err := e.C.Partition(ctx, []uint32{nd.ID}, e.others(nd.ID)); err != nil {
		return nil, err
	}
	return func() error { e.H.Fault("heal"); return e.C.Heal(context.Background()) }, nil
}

// mover starts, cancels and follows random moves of the buckets of the
// run's tables, recording each in the history and e.moves.
type mover struct {
	e   *Env
	rng *rand.Rand // its own: the fault schedule draws from e.Rng at the same time
}

// run steps until ctx ends. Only a move call aimed at what does not exist
// (the harness's mistake) or a move ending elsewhere stops it: refusals
// and unanswered calls are what faults cause.
func (m *mover) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := m.step(ctx); err != nil {
			return err
		}
		pause(ctx, jitter(m.rng, reassignStepInterval))
	}
	return nil
}

// step closes the moves that ended, then cancels one (one step in four,
// when some run) or starts one on a bucket that is not moving.
func (m *mover) step(ctx context.Context) error {
	pl, err := m.e.moves.observe(ctx, m.e.Cl, m.e.H, m.e.tables()...)
	if errors.Is(err, errMoveEndedElsewhere) {
		return err
	}
	if err != nil {
		m.e.C.logf("moves: no status now: %v", err) // no metadata leader, say
		return nil
	}
	if open := m.e.moves.openRefs(); len(open) > 0 && m.rng.IntN(4) == 0 {
		return m.cancel(ctx, open)
	}
	return m.start(ctx, pl)
}

// start moves a bucket that is not moving to a random target of as many
// nodes as it has replicas, not all of them its own.
func (m *mover) start(ctx context.Context, pl placement) error {
	var free []bucketRef
	for r := range pl {
		if !m.e.moves.isOpen(r) {
			free = append(free, r)
		}
	}
	if len(free) == 0 {
		return nil
	}
	slices.SortFunc(free, compareRefs) // map order would make the draw below depend on more than the seed
	r := free[m.rng.IntN(len(free))]
	original := pl[r]
	target := m.target(original)
	opts := client.MoveOptions{ThrottleBytesPerS: -1, MaxMoves: reassignMaxMoves}
	if m.rng.IntN(2) == 0 {
		opts.ThrottleBytesPerS = reassignThrottleBytesPerS
	}
	what := fmt.Sprintf("move %s: %v -> %v (throttle %d B/s, -1 none)", r, original, target, opts.ThrottleBytesPerS)
	cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
	res, err := m.e.Cl.Admin().MoveReplicas(cctx, []client.BucketMove{
		{Database: r.database, Table: r.table, Bucket: r.bucket, Replicas: target}}, opts)
	cancel()
	if err != nil {
		return m.failed(what, err, func() { m.e.moves.started(r, original, target, true) })
	}
	state := "started"
	if len(res.Queued) > 0 {
		state = "queued"
	}
	m.e.H.Fault(what + ": " + state)
	m.e.moves.started(r, original, target, false)
	return nil
}

// target draws len(original) distinct nodes, preferred leader first, that
// are not the same nodes as original.
func (m *mover) target(original []uint32) []uint32 {
	for {
		perm := m.rng.Perm(len(m.e.C.Nodes))
		t := make([]uint32, len(original))
		for i := range t {
			t[i] = m.e.C.Nodes[perm[i]].ID
		}
		if !sameNodes(t, original) {
			return t
		}
	}
}

// cancel goes back from one running move, or (one time in five) from
// every move.
func (m *mover) cancel(ctx context.Context, open []bucketRef) error {
	cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
	defer cancel()
	var what string
	var res *client.MoveResult
	var err error
	if m.rng.IntN(5) == 0 {
		what = "cancel every move"
		res, err = m.e.Cl.Admin().CancelAllMoves(cctx)
	} else {
		r := open[m.rng.IntN(len(open))]
		what = fmt.Sprintf("cancel the move of %s", r)
		res, err = m.e.Cl.Admin().CancelMove(cctx, r.database, r.table, r.bucket)
	}
	if err != nil {
		return m.failed(what, err, nil)
	}
	m.e.H.Fault(fmt.Sprintf("%s: %d cancelled, %d dequeued, %d kept, %d started in their place",
		what, len(res.Cancelled), len(res.Dequeued), len(res.Kept), len(res.Started)))
	return nil
}

// failed records a move call that failed; unanswered, if not nil, runs
// when the call may have taken effect all the same.
func (m *mover) failed(what string, err error, unanswered func()) error {
	m.e.moves.failed()
	switch fateOf(err) {
	case moveMisaimed:
		return fmt.Errorf("chaos: %s: %w", what, err)
	case moveRefused:
		m.e.H.Fault(fmt.Sprintf("%s: refused: %v", what, err))
	default:
		m.e.H.Fault(fmt.Sprintf("%s: unanswered: %v", what, err))
		if unanswered != nil {
			unanswered()
		}
	}
	return nil
}
