package replication

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/floedb/floe/internal/writeseq"
)

// simWorld is one seeded run: the nodes, the controller, the network, the
// clock, the writes waiting for acks=all and those acknowledged.
type simWorld struct {
	seed   uint64
	rng    *rand.Rand
	now    time.Time
	step   int
	trace  *strings.Builder // nil: no trace kept
	nodes  []*simNode
	ctrl   *simController
	net    []simMsg
	lagMax time.Duration
	minISR int

	nextData uint64
	nextRun  int
	writes   []simWrite
	// The idempotent writers, and the numbering of writer ids and
	// connections.
	writers         []*simWriter
	nextWriterID    int64
	nextConn        int
	deliveryTimeout time.Duration
	// acked is every acknowledged offset's entry and the leader epoch it
	// was first acknowledged in; ackedOffsets lists them in
	// acknowledgement order.
	acked        map[int64]simAck
	ackedOffsets []int64
	// leaders names the one run that led each epoch.
	leaders map[int32]string
	// The controller's epochs as last checked.
	ctrlLeaderEpoch, ctrlBucketEpoch int32

	stats simStats
}

// simWrite is an acks=all write waiting on its leader: a plain producer's,
// or a writer's call (the batch it appended, or the earlier one it
// duplicates).
type simWrite struct {
	node        uint32
	run         int
	epoch       int32
	first, last int64
	entries     []simEntry
	call        *simCall // nil: a plain producer's
	dup         bool
}

// simAck is an acknowledged offset: its entry, and the leader epoch that
// first acknowledged it (a writer's retry may be acknowledged as a
// duplicate epochs after its batch was appended).
type simAck struct {
	entry simEntry
	epoch int32
}

// simStats counts what a run did, to show the simulation is not vacuous.
// acked counts acknowledged offsets; writerAcked and writerFailed the
// writers' batches completed either way, serverAcks the acknowledgements
// nodes sent them (duplicates too), resent the calls after a batch's
// first, resequenced the batches given a new writer id and sequence,
// outOfOrder the OUT_OF_ORDER_SEQUENCE answers writers got.
type simStats struct {
	acked, failedWrites, leaderships, truncations, crashes, wipes int
	// movesStarted, movesCompleted and movesCancelled count the moves of
	// the replica set; replicasDeleted the replicas a move or cancel
	// took away and learnersInSync the joining replicas that entered the
	// ISR.
	movesStarted, movesCompleted, movesCancelled, replicasDeleted, learnersInSync int

	writerAcked, writerFailed, serverAcks, calls, resent, resequenced, outOfOrder int
}

func (s *simStats) add(o simStats) {
	s.acked += o.acked
	s.failedWrites += o.failedWrites
	s.leaderships += o.leaderships
	s.truncations += o.truncations
	s.crashes += o.crashes
	s.wipes += o.wipes
	s.movesStarted += o.movesStarted
	s.movesCompleted += o.movesCompleted
	s.movesCancelled += o.movesCancelled
	s.replicasDeleted += o.replicasDeleted
	s.learnersInSync += o.learnersInSync
	s.writerAcked += o.writerAcked
	s.writerFailed += o.writerFailed
	s.serverAcks += o.serverAcks
	s.calls += o.calls
	s.resent += o.resent
	s.resequenced += o.resequenced
	s.outOfOrder += o.outOfOrder
}

func newSimWorld(seed uint64, traced bool) *simWorld {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	n := 3 + rng.IntN(3)
	w := &simWorld{seed: seed, rng: rng, now: t0, lagMax: time.Duration(1+rng.IntN(4)) * time.Second,
		minISR: 1 + rng.IntN(min(n-1, 3)), acked: map[int64]simAck{}, leaders: map[int32]string{},
		ctrlLeaderEpoch: -1, ctrlBucketEpoch: -1}
	if traced {
		w.trace = &strings.Builder{}
	}
	replicas := make([]uint32, n)
	for i := range replicas {
		replicas[i] = uint32(i + 1)
	}
	w.ctrl = newSimController(replicas)
	// Spare nodes hold no replica until a move makes them one.
	spares := 1 + w.rng.IntN(2)
	for i := range spares {
		w.ctrl.register(uint32(n+i+1), 1)
	}
	w.logf("%d replicas and %d spare nodes, min.insync.replicas %d, replica lag max %v", n, spares, w.minISR, w.lagMax)
	for id := uint32(1); id <= uint32(n+spares); id++ {
		w.nextRun++
		nd := &simNode{id: id, up: true, run: w.nextRun, proc: w.nextRun, incarnation: 1, nodeEpoch: w.ctrl.regs[id].nodeEpoch, log: &simLog{},
			seenLeaderEpoch: -1, seenBucketEpoch: -1, seenHWEpoch: -1}
		if slices.Contains(replicas, id) {
			nd.holds = true
			nd.core = New(Config{Self: id, ReplicaLagMax: w.lagMax, MinISR: w.minISR, NodeEpoch: nd.nodeEpoch}, nd.log.recovered())
			nd.writers = NewWriterTable()
		}
		w.nodes = append(w.nodes, nd)
	}
	w.newWriters()
	w.broadcast(w.ctrl.images[len(w.ctrl.images)-1])
	return w
}

func (w *simWorld) logf(format string, args ...any) {
	if w.trace != nil {
		fmt.Fprintf(w.trace, "step %d t=%v: %s\n", w.step, w.now.Sub(t0), fmt.Sprintf(format, args...))
	}
}

func (w *simWorld) send(m simMsg) { w.net = append(w.net, m) }

// broadcast puts a committed image on every running node's stream.
func (w *simWorld) broadcast(img simImage) {
	for _, n := range w.nodes {
		if n.up {
			w.send(simMsg{kind: msgMeta, to: n.id, toRun: n.proc, img: img})
		}
	}
}

func (w *simWorld) node(id uint32) *simNode { return w.nodes[id-1] }

// pick returns a random node that satisfies ok, or nil.
func (w *simWorld) pick(ok func(*simNode) bool) *simNode {
	var c []*simNode
	for _, n := range w.nodes {
		if ok(n) {
			c = append(c, n)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[w.rng.IntN(len(c))]
}

// simAction is one kind of step, chosen with its weight.
type simAction struct {
	weight int
	name   string
	do     func(w *simWorld) error
}

var simActions = []simAction{
	{80, "deliver", (*simWorld).deliverOne},
	{2, "duplicate", func(w *simWorld) error {
		if len(w.net) > 0 {
			m := w.net[w.rng.IntN(len(w.net))]
			w.logf("duplicate %v", m)
			w.send(m)
		}
		return nil
	}},
	{3, "drop", func(w *simWorld) error {
		if len(w.net) > 0 {
			i := w.rng.IntN(len(w.net))
			w.logf("drop %v", w.net[i])
			w.net = slices.Delete(w.net, i, i+1)
		}
		return nil
	}},
	{12, "produce", func(w *simWorld) error {
		leads := func(n *simNode) bool { return n.active() && n.core.role == RoleLeader }
		if n := w.pick(leads); n != nil {
			w.produce(n)
		}
		return nil
	}},
	{8, "write batch", func(w *simWorld) error {
		wr := w.writers[w.rng.IntN(len(w.writers))]
		w.writeBatch(wr)
		w.writerStep(wr)
		return nil
	}},
	{10, "writer", func(w *simWorld) error {
		w.writerStep(w.writers[w.rng.IntN(len(w.writers))])
		return nil
	}},
	{24, "deliver call", func(w *simWorld) error {
		// A node often decides a call as soon as it took its turn.
		if n := w.deliverCall(); n != nil && !n.stalled && w.rng.IntN(2) == 0 {
			return w.decide(n)
		}
		return nil
	}},
	{12, "decide call", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return n.active() && !n.stalled && len(n.turns) > 0 }); n != nil {
			return w.decide(n)
		}
		return nil
	}},
	{3, "stall writes", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return n.active() && !n.stalled }); n != nil {
			n.stalled = true
			w.logf("node %d stalls its writes", n.id)
		}
		return nil
	}},
	{2, "unstall writes", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return n.stalled }); n != nil {
			n.stalled = false
			w.logf("node %d decides writes again", n.id)
		}
		return nil
	}},
	{24, "deliver answer", func(w *simWorld) error {
		// The writer's sender wakes at an answer and acts on it at once.
		if wr := w.deliverReply(false); wr != nil {
			w.writerStep(wr)
		}
		return nil
	}},
	{1, "lose answer", func(w *simWorld) error {
		w.deliverReply(true)
		return nil
	}},
	{1, "break connection", func(w *simWorld) error {
		if cs := w.openConns(func(*simConn) bool { return true }); len(cs) > 0 {
			w.breakConn(cs[w.rng.IntN(len(cs))])
		}
		return nil
	}},
	{15, "fetch", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			return w.startFetch(n)
		}
		return nil
	}},
	{3, "fetch timeout", func(w *simWorld) error {
		// The fetch or its answer was lost or is late: the follower
		// gives up on it (a late answer no longer matches) and fetches
		// again.
		if n := w.pick(func(n *simNode) bool { return n.active() && n.fetching && n.fetched == nil }); n != nil {
			n.fetching = false
			w.logf("node %d: fetch #%d times out", n.id, n.fetchSeq)
		}
		return nil
	}},
	{12, "sync", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			return w.sync(n)
		}
		return nil
	}},
	{6, "tick", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			return w.handle(n, n.core.Tick(w.now))
		}
		return nil
	}},
	{3, "adjust isr timeout", func(w *simWorld) error {
		n := w.pick(func(n *simNode) bool { return n.active() && n.core.Pending() != nil && n.core.Pending().inFlight })
		if n != nil {
			w.logf("node %d: proposal %v times out", n.id, n.core.Pending())
			return w.handle(n, n.core.ProposalOutcome(n.core.Pending().ID, Unknown, nil, w.now))
		}
		return nil
	}},
	{4, "checkpoint hw", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			n.log.hwCheckpoint = n.core.HW()
		}
		return nil
	}},
	{1, "crash", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return n.up }); n != nil {
			w.stats.crashes++
			w.crash(n, false)
		}
		return nil
	}},
	{1, "wipe", func(w *simWorld) error {
		if n := w.pick(func(*simNode) bool { return true }); n != nil && w.rng.IntN(3) == 0 {
			w.stats.wipes++
			w.crash(n, true)
		}
		return nil
	}},
	{5, "restart", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return !n.up }); n != nil {
			return w.restart(n, w.rng.IntN(2) == 0)
		}
		return nil
	}},
	{1, "pause", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			n.paused = true
			w.logf("node %d pauses", n.id)
		}
		return nil
	}},
	{4, "resume", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return n.paused }); n != nil {
			n.paused = false
			w.logf("node %d resumes", n.id)
		}
		return nil
	}},
	{1, "re-register", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			index, img := w.ctrl.register(n.id, n.incarnation)
			n.nodeEpoch = index
			n.core.SetNodeEpoch(index)
			w.logf("node %d registers again, node epoch %d", n.id, index)
			w.broadcast(img)
		}
		return nil
	}},
	{3, "suspect", func(w *simWorld) error {
		// Gossip reports down and paused nodes dead, and now and then a
		// live one: safety must not depend on it being right.
		n := w.pick(func(n *simNode) bool {
			return !w.ctrl.suspected[n.id] && (!n.active() || w.rng.IntN(10) == 0)
		})
		if n != nil {
			w.ctrl.suspected[n.id] = true
			w.logf("controller suspects node %d", n.id)
			w.fence()
		}
		return nil
	}},
	{3, "unsuspect", func(w *simWorld) error {
		if n := w.pick(func(n *simNode) bool { return w.ctrl.suspected[n.id] && n.active() }); n != nil {
			delete(w.ctrl.suspected, n.id)
			w.logf("controller sees node %d alive", n.id)
			w.fence()
		}
		return nil
	}},
	{1, "forget request ids", func(w *simWorld) error {
		// The controller keeps AdjustIsr answers for a while (15 minutes
		// or 100,000 newer requests), not for ever: a retry after that is
		// applied afresh.
		if len(w.ctrl.answers) > 0 {
			w.logf("controller forgets %d request ids", len(w.ctrl.answers))
			clear(w.ctrl.answers)
		}
		return nil
	}},
	{2, "move", func(w *simWorld) error {
		// An operator moves the bucket to 1–all nodes, often as many as
		// it has, in any order.
		from := w.ctrl.replicas
		if w.ctrl.original != nil {
			from = w.ctrl.original
		}
		k := min(max(len(from)+w.rng.IntN(3)-1, 1), len(w.nodes))
		target := make([]uint32, 0, k)
		for _, i := range w.rng.Perm(len(w.nodes))[:k] {
			target = append(target, uint32(i+1))
		}
		if img, ok := w.ctrl.startMove(target); ok {
			w.stats.movesStarted++
			w.logf("controller starts a move to %v: %+v at index %d", target, img.a, img.index)
			w.broadcast(img)
		}
		return nil
	}},
	{5, "complete move", func(w *simWorld) error {
		if img, ok := w.ctrl.completeMove(); ok {
			w.stats.movesCompleted++
			w.logf("controller completes the move: %+v at index %d", img.a, img.index)
			w.broadcast(img)
		}
		return nil
	}},
	{1, "cancel move", func(w *simWorld) error {
		// Rarer than completions: most moves run to their end.
		if w.rng.IntN(3) != 0 {
			return nil
		}
		if img, ok := w.ctrl.cancelMove(); ok {
			w.stats.movesCancelled++
			w.logf("controller cancels the move: %+v at index %d", img.a, img.index)
			w.broadcast(img)
		}
		return nil
	}},
	{2, "metadata resync", func(w *simWorld) error {
		if n := w.pick((*simNode).active); n != nil {
			return w.applyMeta(n, w.ctrl.images[len(w.ctrl.images)-1], false)
		}
		return nil
	}},
}

var simActionsWeight = func() int {
	total := 0
	for _, a := range simActions {
		total += a.weight
	}
	return total
}()

func (w *simWorld) fence() {
	if img, changed := w.ctrl.fence(); changed {
		w.logf("controller commits %+v at index %d", img.a, img.index)
		w.broadcast(img)
	}
}

// stepOnce advances the clock and takes one random action.
func (w *simWorld) stepOnce() error {
	w.step++
	w.now = w.now.Add(time.Duration(w.rng.IntN(300)) * time.Millisecond)
	r := w.rng.IntN(simActionsWeight)
	for _, a := range simActions {
		if r < a.weight {
			return a.do(w)
		}
		r -= a.weight
	}
	panic("unreachable")
}

// deliverOne delivers a random message whose destination can take it; a
// paused node's messages wait.
func (w *simWorld) deliverOne() error {
	if len(w.net) == 0 {
		return nil
	}
	i := w.rng.IntN(len(w.net))
	m := w.net[i]
	if m.to != 0 && w.node(m.to).paused {
		return nil
	}
	w.net = slices.Delete(w.net, i, i+1)
	if m.to == 0 {
		return w.controllerReceives(m)
	}
	n := w.node(m.to)
	if m.kind == msgMeta {
		if !n.up || m.toRun != n.proc {
			return nil
		}
		// A node without a replica of the bucket follows the metadata
		// too: it opens one when a move adds it.
		w.logf("deliver %v", m)
		return w.applyMeta(n, m.img, false)
	}
	if !n.live() || (m.toRun != 0 && m.toRun != n.run) {
		return nil
	}
	w.logf("deliver %v", m)
	switch m.kind {
	case msgMeta:
		return w.applyMeta(n, m.img, false)
	case msgFetch:
		return w.serveFetch(n, m)
	case msgFetchAnswer:
		return w.fetchAnswered(n, m)
	case msgAdjustAnswer:
		a := m.result.a
		return w.handle(n, n.core.ProposalOutcome(m.adjust.proposalID, m.result.outcome, &a, w.now))
	}
	return fmt.Errorf("message %v to node %d", m, m.to)
}

func (w *simWorld) controllerReceives(m simMsg) error {
	if m.kind != msgAdjust {
		return fmt.Errorf("message %v to the controller", m)
	}
	learnersBefore := w.learnersInISR()
	res, img, changed := w.ctrl.adjustIsr(m.adjust)
	w.stats.learnersInSync += max(0, w.learnersInISR()-learnersBefore)
	w.logf("controller: %v → %s %s", m, outcomeName(res.outcome), res.why)
	w.send(simMsg{kind: msgAdjustAnswer, to: m.from, toRun: m.fromRun, adjust: m.adjust, result: res})
	if changed {
		w.broadcast(img)
	}
	return nil
}

// learnersInISR counts the ISR members a move in progress brings.
func (w *simWorld) learnersInISR() int {
	if w.ctrl.original == nil {
		return 0
	}
	n := 0
	for _, id := range w.ctrl.isr {
		if !slices.Contains(w.ctrl.original, id) {
			n++
		}
	}
	return n
}

// settleWrites answers the writes whose leader can now decide them; a
// writer's call gets its answer on its connection.
func (w *simWorld) settleWrites() error {
	var err error
	w.writes = slices.DeleteFunc(w.writes, func(wr simWrite) bool {
		n := w.node(wr.node)
		if !n.live() || n.run != wr.run {
			w.stats.failedWrites++
			return true // the leader died: the outcome is unknown to the writer (its connection broke)
		}
		if n.paused || err != nil {
			return false
		}
		done, ackErr := n.core.AckAll(wr.last, wr.epoch)
		switch {
		case ackErr != nil:
			w.stats.failedWrites++
			if wr.call != nil {
				w.reply(*wr.call, simReply{outcome: writeseq.Retriable, err: ackErr})
			}
			return true
		case !done:
			return false
		}
		if err = w.acknowledge(wr); err != nil || wr.call == nil {
			return true
		}
		if err = w.ackWriterBatch(wr); err != nil {
			return true
		}
		r := simReply{outcome: writeseq.OK, base: wr.first, last: wr.last}
		if wr.dup {
			r.outcome = writeseq.Duplicate
		}
		w.reply(*wr.call, r)
		return true
	})
	return err
}

// durableCopies counts the nodes (up or down) whose log holds e at o
// durably, or held it before a wipe: acks=all promises min.insync.replicas
// copies when the replicas reported them, and a disk lost after that (which
// the leader learns of only through the metadata) is a fault beyond it.
func (w *simWorld) durableCopies(o int64, e simEntry) int {
	copies := 0
	for _, n := range w.nodes {
		for _, l := range append([]*simLog{n.log}, n.wipedLogs...) {
			if o < l.synced && l.entries[o] == e {
				copies++
				break
			}
		}
	}
	return copies
}

// acknowledge records an acknowledged write: its leader must hold it where
// it was appended, at least min.insync.replicas logs durably, and no other
// acknowledged write may have used its offsets.
func (w *simWorld) acknowledge(wr simWrite) error {
	n := w.node(wr.node)
	w.logf("node %d acknowledges [%d,%d] of epoch %d (hw %d)", n.id, wr.first, wr.last, wr.epoch, n.core.HW())
	for i, e := range wr.entries {
		o := wr.first + int64(i)
		if o >= n.log.end() || n.log.entries[o] != e {
			return fmt.Errorf("node %d acknowledged offset %d, which its log no longer holds", n.id, o)
		}
		if copies := w.durableCopies(o, e); copies < w.minISR {
			return fmt.Errorf("node %d acknowledged offset %d with %d durable copies, min.insync.replicas is %d", n.id, o, copies, w.minISR)
		}
		if prev, ok := w.acked[o]; ok {
			if wr.call != nil && prev.entry == e {
				continue // a writer's batch acknowledged again: a retry answered as a duplicate, or the first call after it
			}
			return fmt.Errorf("offset %d acknowledged twice: %+v and %+v", o, prev.entry, e)
		}
		w.acked[o] = simAck{entry: e, epoch: wr.epoch}
		w.ackedOffsets = append(w.ackedOffsets, o)
		w.stats.acked++
	}
	return nil
}
