package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// MoveResult counts the replica moves of a run and how each ended, so a
// verdict shows that moves happened.
type MoveResult struct {
	// Started: moves the cluster took (began at once or queued for a
	// turn), including those whose start went unanswered and that showed
	// up running later.
	Started int `json:"started"`
	// Completed: moves that ended on their target replicas.
	Completed int `json:"completed"`
	// Cancelled: moves that went back to their original replicas (a
	// running move cancelled, or a queued one dropped).
	Cancelled int `json:"cancelled"`
	// Failed: start and cancel calls that failed, refused (a bucket
	// moving already, not enough in-sync replicas to go back) or
	// unanswered while the faults ran; recorded, never a broken promise.
	Failed int `json:"failed"`
	// Unfinished: moves still running or queued moveSettleTimeout after
	// the faults were healed, which the settle then cancelled (those that
	// could not go back it waited for).
	Unfinished int `json:"unfinished"`
}

// errMoveEndedElsewhere: a move ended on replicas neither its target nor
// its original ones, which only someone else's move explains.
var errMoveEndedElsewhere = errors.New("chaos: a move ended on replicas neither its target nor its original ones")

// moveSettleTimeout bounds how long the end of a run waits for the moves
// left running to complete once every fault is healed, before it cancels
// them: a learner catches up at the move throttle at worst.
const moveSettleTimeout = 90 * time.Second

// moveCallTimeout bounds one move call (start, cancel, status): the
// metadata leader may be down or cut off.
const moveCallTimeout = 10 * time.Second

// bucketRef names a bucket by its table.
type bucketRef struct {
	database, table string
	bucket          int32
}

func (r bucketRef) String() string {
	return fmt.Sprintf("%s.%s bucket %d", r.database, r.table, r.bucket)
}

func refOf(m client.BucketMove) bucketRef { return bucketRef{m.Database, m.Table, m.Bucket} }

// openMove is a move started and not yet seen ending.
type openMove struct {
	original, target []uint32
	// unsure: the start went unanswered, so the move may or may not have
	// begun; it counts as started only once seen running or done.
	unsure bool
}

// moveLog follows the moves a run starts from their start to their end,
// which it learns from the cluster: a move no longer running or queued
// ended on its target (completed) or on its original replicas
// (cancelled). Only one move of a bucket is open at a time, so the end
// state of a bucket says how its move ended. Safe for concurrent use.
type moveLog struct {
	mu   sync.Mutex
	open map[bucketRef]*openMove
	res  MoveResult
}

func newMoveLog() *moveLog { return &moveLog{open: map[bucketRef]*openMove{}} }

// result is the counts so far.
func (ml *moveLog) result() MoveResult {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.res
}

// isOpen says whether a move of the bucket is open.
func (ml *moveLog) isOpen(r bucketRef) bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.open[r] != nil
}

// openRefs are the buckets with an open move whose start was answered.
func (ml *moveLog) openRefs() []bucketRef {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	var out []bucketRef
	for r, om := range ml.open {
		if !om.unsure {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, compareRefs)
	return out
}

// compareRefs orders buckets by database, table and number.
func compareRefs(a, b bucketRef) int {
	return cmp.Or(strings.Compare(a.database, b.database), strings.Compare(a.table, b.table), cmp.Compare(a.bucket, b.bucket))
}

// started records a move the cluster took (unsure: its start went
// unanswered).
func (ml *moveLog) started(r bucketRef, original, target []uint32, unsure bool) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.open[r] = &openMove{original: slices.Clone(original), target: slices.Clone(target), unsure: unsure}
	if !unsure {
		ml.res.Started++
	}
}

// failed counts a start or cancel call that failed.
func (ml *moveLog) failed() {
	ml.mu.Lock()
	ml.res.Failed++
	ml.mu.Unlock()
}

// unfinished counts moves the settle had to cancel.
func (ml *moveLog) unfinished(n int) {
	ml.mu.Lock()
	ml.res.Unfinished += n
	ml.mu.Unlock()
}

// tableRef names a table by its database.
type tableRef struct{ database, table string }

// placement is the replicas of every bucket of some tables, as the
// metadata lists them.
type placement map[bucketRef][]uint32

// readPlacement describes the tables.
func readPlacement(ctx context.Context, cl *client.Client, tables ...tableRef) (placement, error) {
	out := placement{}
	for _, t := range tables {
		desc, err := cl.Admin().DescribeTable(ctx, t.database, t.table)
		if err != nil {
			return nil, err
		}
		for _, p := range desc.Placement {
			out[bucketRef{t.database, t.table, p.Bucket}] = p.Replicas
		}
	}
	return out, nil
}

// observe reads the moves running and queued and the tables' placement,
// closes the open moves that ended (reconcile) and returns the placement.
func (ml *moveLog) observe(ctx context.Context, cl *client.Client, h *History, tables ...tableRef) (placement, error) {
	ctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
	defer cancel()
	st, err := cl.Admin().MoveStatus(ctx)
	if err != nil {
		return nil, err
	}
	// The placement is read after the status: a move the status no
	// longer lists has ended by then, and no other started since (only
	// this log's owner starts moves, and not while it observes).
	pl, err := readPlacement(ctx, cl, tables...)
	if err != nil {
		return nil, err
	}
	moving := map[bucketRef]*openMove{}
	for _, p := range st.Running {
		moving[refOf(p.BucketMove)] = &openMove{original: p.Original, target: p.Replicas}
	}
	for _, q := range st.Queued {
		moving[refOf(q)] = &openMove{original: pl[refOf(q)], target: q.Replicas}
	}
	return pl, ml.reconcile(moving, pl, h)
}

// reconcile brings the log up to the moves running or queued (moving)
// and the placement pl. An open move no longer moving ended on its
// target (completed) or on its original replicas (cancelled; never begun
// when its start went unanswered). A move moving that the log has no
// record of, or only an unsure one, is one whose unanswered start did
// begin: it opens, or stays open, as started.
func (ml *moveLog) reconcile(moving map[bucketRef]*openMove, pl placement, h *History) error {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	for r, m := range moving {
		switch om := ml.open[r]; {
		case om == nil:
			ml.open[r] = m
			ml.res.Started++
			h.Fault(fmt.Sprintf("move of %s to %v seen running: an unanswered start began after all", r, m.target))
		case om.unsure:
			om.unsure = false
			ml.res.Started++
			h.Fault(fmt.Sprintf("move of %s to %v seen running: its unanswered start began", r, om.target))
		}
	}
	var elsewhere []string
	for r, om := range ml.open {
		now, read := pl[r]
		if moving[r] != nil || !read {
			continue
		}
		delete(ml.open, r)
		switch {
		case sameNodes(now, om.target):
			if om.unsure {
				ml.res.Started++
			}
			ml.res.Completed++
			h.Fault(fmt.Sprintf("move of %s completed: replicas %v", r, now))
		case sameNodes(now, om.original) && om.unsure:
			h.Fault(fmt.Sprintf("move of %s to %v never began: replicas %v", r, om.target, now))
		case sameNodes(now, om.original):
			ml.res.Cancelled++
			h.Fault(fmt.Sprintf("move of %s cancelled: replicas %v again", r, now))
		default:
			// Only this log's owner starts moves, one open per bucket:
			// the replicas are the target's or the original's.
			elsewhere = append(elsewhere, fmt.Sprintf("%s from %v to %v, now %v", r, om.original, om.target, now))
		}
	}
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		return fmt.Errorf("%w: %s", errMoveEndedElsewhere, strings.Join(elsewhere, "; "))
	}
	return nil
}

// sameNodes says whether two replica lists hold the same nodes.
func sameNodes(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// moveCallFate is what a failed move call says about the metadata.
type moveCallFate int

const (
	// moveUnanswered: no answer (no metadata leader, a timeout, a lost
	// reply): the call may have taken effect.
	moveUnanswered moveCallFate = iota
	// moveRefused: the cluster answered no and changed nothing (the
	// bucket moving already or not moving, a draining target, no
	// in-sync original replica to go back to).
	moveRefused
	// moveMisaimed: the call named what does not exist (a table, a node):
	// the harness is wrong, not the cluster.
	moveMisaimed
)

// fateOf classifies a failed move call.
func fateOf(err error) moveCallFate {
	for _, sentinel := range []error{transport.ErrUnknownDatabase, transport.ErrUnknownTable, transport.ErrUnknownNode,
		transport.ErrNotAuthorized, transport.ErrUnauthenticated} {
		if errors.Is(err, sentinel) {
			return moveMisaimed
		}
	}
	for _, sentinel := range []error{transport.ErrAlreadyExists, transport.ErrInvalidRequest, transport.ErrNotEnoughReplicas} {
		if errors.Is(err, sentinel) {
			return moveRefused
		}
	}
	return moveUnanswered
}

// settleMoves waits until no move runs or waits: with every fault healed
// each completes once its target is in sync. Moves still there after
// moveSettleTimeout are counted unfinished and cancelled (those that
// cannot go back must complete), and waited for again. It then closes the
// log's open moves, so the replica check compares the final replica sets.
func settleMoves(ctx context.Context, cl *client.Client, ml *moveLog, h *History, tables ...tableRef) (MoveResult, error) {
	deadline := time.Now().Add(moveSettleTimeout)
	cancelled := false
	for {
		cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
		st, err := cl.Admin().MoveStatus(cctx)
		cancel()
		if err == nil && len(st.Running)+len(st.Queued) == 0 {
			break
		}
		if time.Now().After(deadline) {
			if cancelled || err != nil {
				return ml.result(), fmt.Errorf("chaos: moves did not end %v after the faults were healed (status: %+v, %v)", moveSettleTimeout, st, err)
			}
			h.Fault(fmt.Sprintf("settle: cancel the %d moves still running and %d queued", len(st.Running), len(st.Queued)))
			ml.unfinished(len(st.Running) + len(st.Queued))
			cctx, cancel := context.WithTimeout(ctx, moveCallTimeout)
			_, err := cl.Admin().CancelAllMoves(cctx)
			cancel()
			if err != nil {
				return ml.result(), fmt.Errorf("chaos: cancelling the moves left at the end: %w", err)
			}
			cancelled, deadline = true, time.Now().Add(moveSettleTimeout)
		}
		if !pause(ctx, 200*time.Millisecond) {
			return ml.result(), ctx.Err()
		}
	}
	if _, err := ml.observe(ctx, cl, h, tables...); err != nil {
		return ml.result(), err
	}
	return ml.result(), nil
}
