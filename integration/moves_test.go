package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// Moving replicas with real processes (docs/replication.md, Moving 1-4):
// a move cancelled half way, the controller killed while a move runs, and
// a move there and back under load. Each test runs four nodes and one
// table of one bucket of replication 3, so one node does not hold it.

// moveTable is the table of the move tests, in a database of each test's
// name.
const moveTable = "events"

// Sizes of the move tests: the first learner fetch takes up to 4 MiB
// (replica.DefaultFollowerFetchBytes) and puts the throttle that far in
// debt, so a bucket of moveFillRows rows of about 1 KB moved at
// moveThrottle bytes/s copies most of it at once and the rest only after
// about eight seconds: the window the tests act in (a cancel, or a
// controller's death and its successor's election).
const (
	moveFillRows = 5000
	moveThrottle = 500 << 10
)

// moveFixture is a 4-node cluster (every node a voter and a tablet node,
// each with a /metrics endpoint) with a log table of one bucket of
// replication 3.
type moveFixture struct {
	t   *testing.T
	c   *Cluster
	cl  *client.Client
	tbl *client.Table
	db  string
	// httpAddr is each node's /metrics address, by node id.
	httpAddr map[uint32]string
}

func startMoveFixture(t *testing.T, db string) *moveFixture {
	t.Helper()
	httpAddr := map[uint32]string{}
	nodeArgs := map[uint32][]string{}
	for id := uint32(1); id <= 4; id++ {
		httpAddr[id] = freeAddr(t)
		nodeArgs[id] = []string{"--http", httpAddr[id]}
	}
	c := StartCluster(t, 4, ClusterOptions{NodeArgs: nodeArgs})
	ctx := t.Context()
	cl := c.Client(ctx)
	f := &moveFixture{t: t, c: c, cl: cl, db: db, httpAddr: httpAddr}
	// Rows: the tests' load writes one row per batch, acks=all, and an
	// Arrow batch of one row carries a couple of hundred bytes of column
	// metadata; in rows the load stays well below the learner's throttle,
	// so the learner catches up while it runs.
	f.tbl = createLogTableWith(t, ctx, cl, db, moveTable, 1, map[string]string{"log.format": "row"})
	waitISRFull(t, ctx, cl, db, moveTable)
	return f
}

// bucket is the bucket as the metadata says.
func (f *moveFixture) bucket() client.Bucket {
	f.t.Helper()
	desc, err := f.cl.Admin().DescribeTable(f.t.Context(), f.db, moveTable)
	if err != nil {
		f.t.Fatal(err)
	}
	return desc.Placement[0]
}

// spare is the node that holds no replica of b.
func (f *moveFixture) spare(b client.Bucket) *Node {
	f.t.Helper()
	for _, nd := range f.c.Nodes {
		if !slices.Contains(b.Replicas, nd.ID) {
			return nd
		}
	}
	f.t.Fatalf("every node holds a replica of the bucket: %+v", b)
	return nil
}

// node is the node of id.
func (f *moveFixture) node(id uint32) *Node { return f.c.Nodes[id-1] }

// replicaDir is the folder of the bucket's replica on nd.
func (f *moveFixture) replicaDir(nd *Node) string {
	return filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b0", f.tbl.ID()))
}

// holdsReplicaDir reports whether nd's folder of the bucket's replica
// exists.
func (f *moveFixture) holdsReplicaDir(nd *Node) bool {
	_, err := os.Stat(f.replicaDir(nd))
	return err == nil
}

// move starts the bucket's move to target at throttle bytes/s (-1: none)
// and checks that it started.
func (f *moveFixture) move(target []uint32, throttle int64) {
	f.t.Helper()
	res, err := f.cl.Admin().MoveReplicas(f.t.Context(), []client.BucketMove{{Database: f.db, Table: moveTable, Replicas: target}},
		client.MoveOptions{ThrottleBytesPerS: throttle})
	if err != nil {
		f.t.Fatalf("move to %v: %v", target, err)
	}
	if len(res.Started) != 1 || !slices.Equal(res.Started[0].Replicas, target) {
		f.t.Fatalf("move to %v did not start: %+v", target, res)
	}
}

// running returns the bucket's running move, if any.
func (f *moveFixture) running() (client.MoveProgress, bool, error) {
	st, err := f.cl.Admin().MoveStatus(f.t.Context())
	if err != nil {
		return client.MoveProgress{}, false, err
	}
	for _, m := range st.Running {
		if m.Database == f.db && m.Table == moveTable && m.Bucket == 0 {
			return m, true, nil
		}
	}
	return client.MoveProgress{}, false, nil
}

// waitCopying waits until learner has copied bytes of the move and the
// move still runs, and returns the bytes copied.
func (f *moveFixture) waitCopying(learner *Node) int64 {
	f.t.Helper()
	var copied int64
	waitFor(f.t, 30*time.Second, fmt.Sprintf("node %d to copy the bucket as a learner", learner.ID), func() bool {
		var err error
		copied, err = f.moveBytes(learner)
		return err == nil && copied > 0 && f.holdsReplicaDir(learner)
	})
	m, ok, err := f.running()
	if err != nil || !ok || slices.Contains(m.InSync, learner.ID) {
		f.t.Fatalf("the move ended before the test could act (throttle too loose for this machine?): running %v %+v, err %v", ok, m, err)
	}
	return copied
}

// waitMoved waits until no move runs and the bucket's replicas are want,
// all in the ISR, with a leader among them.
func (f *moveFixture) waitMoved(want []uint32, timeout time.Duration) client.Bucket {
	f.t.Helper()
	var b client.Bucket
	waitFor(f.t, timeout, fmt.Sprintf("the bucket on replicas %v, all in sync, no move running", want), func() bool {
		desc, err := f.cl.Admin().DescribeTable(f.t.Context(), f.db, moveTable)
		if err != nil {
			return false
		}
		b = desc.Placement[0]
		if !slices.Equal(b.Replicas, want) || !sameMembers(b.ISR, want) || !slices.Contains(want, b.Leader) {
			return false
		}
		_, moving, err := f.running()
		return err == nil && !moving
	})
	return b
}

// waitDeleted waits until nd no longer holds the bucket's replica folder.
func (f *moveFixture) waitDeleted(nd *Node, why string) {
	f.t.Helper()
	waitFor(f.t, 30*time.Second, fmt.Sprintf("node %d to delete its replica folder %s (%s)", nd.ID, f.replicaDir(nd), why),
		func() bool { return !f.holdsReplicaDir(nd) })
}

// moveBytes reads floe_move_bytes_total from nd's /metrics.
func (f *moveFixture) moveBytes(nd *Node) (int64, error) {
	v, err := metricValue(f.t.Context(), f.httpAddr[nd.ID], "floe_move_bytes_total")
	return int64(v), err
}

// checkReadBack reads the bucket from its start up to its settled high
// watermark: every acknowledged id once, no id twice, ids rising with
// offsets (each test's writers write in id order, one after the other).
func (f *moveFixture) checkReadBack(acked []int64) {
	f.t.Helper()
	ctx := f.t.Context()
	waitHWSettled(f.t, ctx, f.cl, f.db, moveTable)
	records := scanAll(f.t, ctx, f.tbl, 1)
	seen := make(map[int64]bool, len(records))
	for i, r := range records {
		if seen[r.id] {
			f.t.Fatalf("id %d read twice (again at offset %d)", r.id, r.offset)
		}
		seen[r.id] = true
		if i > 0 && r.id <= records[i-1].id {
			f.t.Fatalf("id %d at offset %d after id %d: out of order", r.id, r.offset, records[i-1].id)
		}
	}
	for _, id := range acked {
		if !seen[id] {
			f.t.Fatalf("acknowledged id %d lost: %d records read", id, len(records))
		}
	}
	f.t.Logf("read back %d records, every one of %d acknowledged once, in order", len(records), len(acked))
}

// sameMembers reports whether a and b hold the same ids, in any order.
func sameMembers(a, b []uint32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id uint32) bool { return !slices.Contains(b, id) })
}

// ids lists [from, to).
func ids(from, to int64) []int64 {
	out := make([]int64, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// produceLoad appends rows of rising ids with acks=all, one at a time,
// each waited for, until stopped.
type produceLoad struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	acked []int64
	// unknown: writes whose outcome the writer did not learn; each may
	// be stored or not, but at most once.
	unknown  []int64
	firstErr error
}

// startProduceLoad starts writing ids firstID, firstID+1, ... to tbl.
func startProduceLoad(t *testing.T, tbl *client.Table, firstID int64) *produceLoad {
	t.Helper()
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	l := &produceLoad{stop: make(chan struct{}), done: make(chan struct{})}
	ctx := t.Context()
	go func() {
		defer close(l.done)
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w.Close(cctx)
		}()
		for id := firstID; ; id++ {
			select {
			case <-l.stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			l.record(id, appendLoadRow(ctx, w, tbl, id, noise(id, 100)))
		}
	}()
	t.Cleanup(l.halt)
	return l
}

// appendLoadRow appends one row and waits up to 30 s for its ack.
func appendLoadRow(ctx context.Context, w *client.AppendWriter, tbl *client.Table, id int64, pad string) error {
	enc := tbl.NewRowEncoder()
	enc.SetInt64(0, id)
	enc.SetString(1, pad)
	row, err := enc.Finish(nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fut, err := w.Append(ctx, row)
	if err == nil {
		_, err = fut.Wait(ctx)
	}
	return err
}

func (l *produceLoad) record(id int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.unknown = append(l.unknown, id)
		if l.firstErr == nil {
			l.firstErr = fmt.Errorf("id %d: %w", id, err)
		}
		return
	}
	l.acked = append(l.acked, id)
}

// count is how many writes were acknowledged so far.
func (l *produceLoad) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitMore waits until n more writes than now are acknowledged.
func (l *produceLoad) waitMore(t *testing.T, n int, what string) {
	t.Helper()
	want := l.count() + n
	waitFor(t, 30*time.Second, fmt.Sprintf("%d more acknowledged writes %s", n, what), func() bool { return l.count() >= want })
}

// halt stops the load and waits for its last write.
func (l *produceLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// finish stops the load and returns the acknowledged ids, logging the
// writes whose outcome is unknown.
func (l *produceLoad) finish(t *testing.T) []int64 {
	t.Helper()
	l.halt()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("load: %d writes acknowledged, %d with an unknown outcome (first: %v)", len(l.acked), len(l.unknown), l.firstErr)
	return slices.Clone(l.acked)
}

// compareBucketReplicas stops the cluster and checks that the replicas of
// bucket 0 on nodes end at the same offset and hold byte-identical
// batches.
func compareBucketReplicas(t *testing.T, c *Cluster, tbl *client.Table, nodes []uint32) {
	t.Helper()
	for _, nd := range c.Nodes {
		c.Stop(nd)
	}
	var first []string
	var firstEnd int64
	for i, id := range nodes {
		dir := filepath.Join(c.Nodes[id-1].DataDir, "tablet", fmt.Sprintf("t%d-b0", tbl.ID()))
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("replica of node %d: %v", id, err)
		}
		batches, end := readReplicaLog(t, dir)
		if i == 0 {
			first, firstEnd = batches, end
			continue
		}
		if end != firstEnd || !slices.Equal(batches, first) {
			t.Fatalf("replica of node %d (end %d, %d batches) differs from node %d's (end %d, %d batches)",
				id, end, len(batches), nodes[0], firstEnd, len(first))
		}
	}
	t.Logf("replicas on nodes %v identical: %d batches, end %d", nodes, len(first), firstEnd)
}

// TestMoveCancelledHalfWay (Moving 2, 3): under acks=all load, a
// throttled move of a bucket to a node that did not hold it is cancelled
// while the learner copies. The bucket is back on its original replicas,
// in order, all in sync, with its leader; no move runs, and the learner
// deletes its copy. The same move started again, unthrottled, completes
// from an empty log on that node, the replica it removes deletes its
// copy, every acknowledged record reads back once and in order, and the
// target's replicas hold the same batches.
func TestMoveCancelledHalfWay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-node cluster")
	}
	f := startMoveFixture(t, "cancel")
	ctx := t.Context()
	appendPadded(t, ctx, f.tbl, 0, moveFillRows)
	orig := f.bucket()
	learner := f.spare(orig)
	load := startProduceLoad(t, f.tbl, moveFillRows)
	load.waitMore(t, 50, "before the move")

	// The learner replaces the last replica.
	target := append(slices.Clone(orig.Replicas[:2]), learner.ID)
	f.move(target, moveThrottle)
	copied := f.waitCopying(learner)
	t.Logf("node %d copied %d bytes as a learner; cancelling", learner.ID, copied)

	res, err := f.cl.Admin().CancelMove(ctx, f.db, moveTable, 0)
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if len(res.Cancelled) != 1 || !slices.Equal(res.Cancelled[0].Replicas, orig.Replicas) {
		t.Fatalf("cancel did not go back to the original replicas %v: %+v", orig.Replicas, res)
	}
	b := f.waitMoved(orig.Replicas, 30*time.Second)
	if b.Leader != orig.Leader {
		t.Fatalf("cancel moved the leadership from node %d to %d", orig.Leader, b.Leader)
	}
	f.waitDeleted(learner, "the cancelled move's learner")
	load.waitMore(t, 50, "after the cancel")

	f.move(target, -1)
	f.waitMoved(target, 30*time.Second)
	f.waitDeleted(f.node(orig.Replicas[2]), "moved off after the cancelled move was started again")
	load.waitMore(t, 50, "after the second move")

	f.checkReadBack(append(ids(0, moveFillRows), load.finish(t)...))
	compareBucketReplicas(t, f.c, f.tbl, target)
}

// TestMoveSurvivesControllerKill (Moving 2, 3): the metadata leader, a
// replica of the bucket that the move takes off it, is SIGKILLed while a
// throttled move runs under acks=all load. The move carries on under the
// new controller (still running when it is elected) and completes: the
// bucket's replicas are the target, all in sync. Two ways: the controller
// is a follower of the bucket and is restarted while the move runs; or it
// leads the bucket too (the learner then follows the replica that takes
// over) and is restarted only once the move completed, so it learns of
// the removal from the metadata when it comes back. Either way it deletes
// its replica, nothing acknowledged is lost or doubled, and the moved
// replica holds the same batches as the others.
func TestMoveSurvivesControllerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4-node clusters and kills a node")
	}
	for _, tc := range []struct {
		name string
		// leads: the killed controller leads the bucket, else it follows.
		leads bool
		// restartMoving: restart the killed node while the move runs,
		// else once it completed.
		restartMoving bool
	}{
		{"follower restarted while moving", false, true},
		{"leader restarted once moved", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startMoveFixture(t, "ctrl")
			ctx := t.Context()
			orig := f.bucket()
			learner := f.spare(orig)
			followers := slices.DeleteFunc(slices.Clone(orig.Replicas), func(id uint32) bool { return id == orig.Leader })
			controller := f.node(followers[0])
			if tc.leads {
				controller = f.node(orig.Leader)
			}
			// The target keeps the other two replicas, the leader first
			// if it stays, and adds the learner.
			var target []uint32
			for _, id := range append([]uint32{orig.Leader}, followers...) {
				if id != controller.ID {
					target = append(target, id)
				}
			}
			target = append(target, learner.ID)
			if f.c.WaitLeader(30*time.Second) != controller {
				if err := f.cl.Admin().TransferLeadership(ctx, controller.ID); err != nil {
					t.Fatalf("make node %d the metadata leader: %v", controller.ID, err)
				}
			}
			waitFor(t, 30*time.Second, fmt.Sprintf("node %d to lead the metadata", controller.ID), func() bool {
				return f.c.Leader() == controller
			})

			appendPadded(t, ctx, f.tbl, 0, moveFillRows)
			load := startProduceLoad(t, f.tbl, moveFillRows)
			load.waitMore(t, 50, "before the move")

			f.move(target, moveThrottle)
			copied := f.waitCopying(learner)
			t.Logf("node %d copied %d bytes as a learner; killing the controller, node %d", learner.ID, copied, controller.ID)
			f.c.Kill(controller)

			newController := f.c.WaitLeader(30 * time.Second)
			var moving bool
			waitFor(t, 30*time.Second, "the new controller to answer MoveStatus", func() bool {
				var err error
				_, moving, err = f.running()
				return err == nil
			})
			if !moving {
				t.Fatalf("the move ended before node %d became the controller: throttle too loose for this machine?", newController.ID)
			}
			t.Logf("node %d controls; the move still runs", newController.ID)
			if tc.restartMoving {
				f.c.Restart(controller)
			}
			b := f.waitMoved(target, 60*time.Second)
			t.Logf("moved: replicas %v, ISR %v, leader %d", b.Replicas, b.ISR, b.Leader)
			if !tc.restartMoving {
				if !f.holdsReplicaDir(controller) {
					t.Fatalf("node %d's replica folder vanished while it was down", controller.ID)
				}
				f.c.Restart(controller)
			}
			f.waitDeleted(controller, "the killed controller's replica, which the move removed")
			load.waitMore(t, 50, "after the move")

			f.checkReadBack(append(ids(0, moveFillRows), load.finish(t)...))
			compareBucketReplicas(t, f.c, f.tbl, target)
		})
	}
}

// TestMoveThereAndBack (Moving 1, 2): under acks=all load, the bucket
// moves off its leader to the node that did not hold it, then back to its
// original replicas. Each move completes with the target all in sync and
// the leadership on the target's first replica; each removed replica
// deletes its copy (the original leader's, before it joins again with an
// empty log); no acknowledged write is lost or doubled.
func TestMoveThereAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-node cluster")
	}
	f := startMoveFixture(t, "back")
	ctx := t.Context()
	const filled = 2000
	appendPadded(t, ctx, f.tbl, 0, filled)
	orig := f.bucket()
	spare := f.spare(orig)
	oldLeader := f.node(orig.Leader)
	load := startProduceLoad(t, f.tbl, filled)
	load.waitMore(t, 50, "before the moves")

	followers := slices.DeleteFunc(slices.Clone(orig.Replicas), func(id uint32) bool { return id == orig.Leader })
	there := append([]uint32{spare.ID}, followers...)
	f.move(there, -1)
	b := f.waitMoved(there, 30*time.Second)
	if b.Leader != spare.ID {
		t.Fatalf("the move off node %d made node %d the leader, want %d", oldLeader.ID, b.Leader, spare.ID)
	}
	f.waitDeleted(oldLeader, "moved off")
	load.waitMore(t, 50, "after the move there")

	back := append([]uint32{orig.Leader}, followers...)
	f.move(back, -1)
	b = f.waitMoved(back, 30*time.Second)
	if b.Leader != orig.Leader {
		t.Fatalf("the move back made node %d the leader, want %d", b.Leader, orig.Leader)
	}
	f.waitDeleted(spare, "moved back off")
	load.waitMore(t, 50, "after the move back")

	f.checkReadBack(append(ids(0, filled), load.finish(t)...))
	compareBucketReplicas(t, f.c, f.tbl, back)
}
