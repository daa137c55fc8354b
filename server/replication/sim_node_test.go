package replication

import (
	"fmt"
	"slices"
)

// simNode is one tablet node holding a replica of the bucket: its log
// survives crashes (less the unsynced tail), its core and everything in
// memory do not.
type simNode struct {
	id         uint32
	up, paused bool
	// holds: the node's disk holds a replica of the bucket (its log, maybe
	// empty). A node opens its replica when the metadata lists it and
	// deletes it when committed metadata no longer does.
	holds bool
	// run is this replica's lifetime in this process: a new one at every
	// start, and when the replica is deleted; 0 while down. proc is the
	// process's: the metadata stream is the node's, not a replica's.
	run, proc   int
	incarnation int // the data folder's; a wipe makes a new one
	nodeEpoch   int64
	log         *simLog
	// wipedLogs are the logs wipes lost.
	wipedLogs []*simLog
	core      *Bucket
	metaIndex int64 // the newest metadata index applied in this run
	// writers is the replica's writer table (rebuilt from the log when it
	// opens or truncates); turns are the writers' calls that took their
	// turn here, oldest first, not decided yet; while stalled (a slow
	// fsync holding the produce lock, say) none is decided, but the node
	// leads, fetches and takes turns as before.
	writers *WriterTable
	turns   []simCall
	stalled bool

	// A follower has one fetch out at a time; its answer's batches wait
	// for an fsync before the core hears of them.
	fetchSeq uint64
	fetching bool
	fetched  *simFetched

	// What the checks saw last in this run.
	seenLeaderEpoch, seenBucketEpoch int32
	seenHW                           int64
	seenHWEpoch                      int32
}

// simFetched is a fetch answer appended but not yet synced.
type simFetched struct {
	leader uint32
	epoch  int32
	hw     int64
}

func (n *simNode) live() bool   { return n.up && n.core != nil }
func (n *simNode) active() bool { return n.live() && !n.paused }

func (n *simNode) role() (Role, int32) {
	r, _, e := n.core.Role()
	return r, e
}

// handle performs the effects of a transition of n's core.
func (w *simWorld) handle(n *simNode, eff Effects) error {
	if eff.RoleChanged {
		n.fetching, n.fetched = false, nil
	}
	if eff.StartEpoch {
		_, epoch := n.role()
		if err := n.log.assignEpoch(epoch); err != nil {
			return err
		}
		who := fmt.Sprintf("node %d run %d", n.id, n.run)
		if prev, ok := w.leaders[epoch]; ok && prev != who {
			return fmt.Errorf("two leaders in epoch %d: %s and %s", epoch, prev, who)
		}
		w.leaders[epoch] = who
		w.stats.leaderships++
		w.logf("node %d leads epoch %d from offset %d", n.id, epoch, n.log.end())
	}
	if eff.StaleLeadership {
		w.logf("node %d refuses a stale leadership", n.id)
	}
	if p := eff.Propose; p != nil {
		w.send(simMsg{kind: msgAdjust, from: n.id, fromRun: n.run, adjust: simAdjust{
			requestID: "bucket-0/" + p.Key(), leaderID: n.id, proposalID: p.ID,
			leaderEpoch: p.LeaderEpoch, bucketEpoch: p.BucketEpoch, isr: slices.Clone(p.ISR), nodeEpochs: slices.Clone(p.NodeEpochs)}})
	}
	return nil
}

// applyMeta gives n's core a committed image; the log is synced first (a
// replica takes a role only with its log synced).
func (w *simWorld) applyMeta(n *simNode, img simImage, stale bool) error {
	if !stale && img.index <= n.metaIndex {
		return nil // the stream is in order: a late copy is not applied
	}
	n.metaIndex = max(n.metaIndex, img.index)
	// Only metadata as of the node's registration or later opens or
	// deletes a replica: older metadata may name replica sets long gone.
	listed, current := slices.Contains(img.a.Replicas, n.id), img.index >= n.nodeEpoch
	switch {
	case n.core == nil && listed && current:
		w.openReplica(n)
	case n.core != nil && !listed && current:
		w.deleteReplica(n)
		return nil
	}
	if n.core == nil {
		return nil
	}
	if err := w.sync(n); err != nil {
		return err
	}
	w.logf("node %d applies metadata index %d %+v (stale %v)", n.id, img.index, img.a, stale)
	return w.handle(n, n.core.Assign(img.a, n.log.synced, w.now))
}

// sync fsyncs n's log and tells the core: a leader's durable end, or a
// follower's fetch answer now durable.
func (w *simWorld) sync(n *simNode) error {
	n.log.sync()
	if role, _ := n.role(); role == RoleLeader {
		return w.handle(n, n.core.DurableEnd(n.log.synced))
	}
	if f := n.fetched; f != nil {
		n.fetched, n.fetching = nil, false
		return w.handle(n, n.core.Fetched(f.leader, f.epoch, f.hw, n.log.synced))
	}
	return nil
}

// openReplica starts n's replica: the log its disk holds, or a new empty
// one.
func (w *simWorld) openReplica(n *simNode) {
	if !n.holds {
		n.holds, n.log = true, &simLog{}
	}
	n.core = New(Config{Self: n.id, ReplicaLagMax: w.lagMax, MinISR: w.minISR, NodeEpoch: n.nodeEpoch}, n.log.recovered())
	n.writers = n.log.writerTable()
	n.seenLeaderEpoch, n.seenBucketEpoch, n.seenHW, n.seenHWEpoch = -1, -1, 0, -1
	w.logf("node %d opens its replica, log end %d", n.id, n.log.end())
}

// deleteReplica closes n's replica, which committed metadata no longer
// lists, and deletes its log. What the replica had on its way (fetches,
// proposals) dies with it: the next replica is a new run. The deleted log
// still counts as a copy acknowledged writes had.
func (w *simWorld) deleteReplica(n *simNode) {
	w.nextRun++
	w.stats.replicasDeleted++
	n.run, n.core, n.holds = w.nextRun, nil, false
	n.fetching, n.fetched = false, nil
	n.writers, n.turns, n.stalled = nil, nil, false
	n.wipedLogs = append(n.wipedLogs, n.log)
	n.log = &simLog{}
	w.logf("node %d is no longer a replica: deletes its log, as run %d", n.id, n.run)
}

// startFetch sends n's fetch to its leader.
func (w *simWorld) startFetch(n *simNode) error {
	leader, epoch, offset, ok := n.core.FollowerFetchFrom()
	if !ok || n.fetching {
		return nil
	}
	if offset != n.log.end() {
		return fmt.Errorf("node %d fetches from %d, its log ends at %d", n.id, offset, n.log.end())
	}
	n.fetchSeq++
	n.fetching = true
	w.send(simMsg{kind: msgFetch, from: n.id, to: leader, fromRun: n.run, seq: n.fetchSeq, fetch: FollowerFetch{
		Follower: n.id, LeaderEpoch: epoch, Offset: offset, LastFetchedEpoch: n.log.latestEpoch(), NodeEpoch: n.nodeEpoch}})
	return nil
}

// serveFetch answers a fetch on the node it was sent to, with whole
// batches up to a random budget.
func (w *simWorld) serveFetch(n *simNode, m simMsg) error {
	l := LeaderLog{StartOffset: 0, WrittenEnd: n.log.end(), EpochEnd: n.log.endOffsetFor}
	ans, eff, err := n.core.ServeFetch(m.fetch, l, w.now)
	reply := simMsg{kind: msgFetchAnswer, from: n.id, to: m.from, toRun: m.fromRun, seq: m.seq, answer: ans, fetchErr: err}
	if err == nil && !ans.Diverging && ans.To > ans.From {
		k := 1 + w.rng.Int64N(min(ans.To-ans.From, 8))
		for ans.From+k < ans.To && !n.log.entries[ans.From+k-1].endsBatch() {
			k++
		}
		reply.entries = slices.Clone(n.log.entries[ans.From : ans.From+k])
	}
	w.send(reply)
	return w.handle(n, eff)
}

// fetchAnswered applies a fetch answer on the follower that asked:
// truncation on divergence, else the batches appended (and maybe synced
// at once).
func (w *simWorld) fetchAnswered(n *simNode, m simMsg) error {
	if !n.fetching || n.fetched != nil || m.seq != n.fetchSeq {
		return nil
	}
	n.fetching = false
	leader, epoch, _, ok := n.core.FollowerFetchFrom()
	if m.fetchErr != nil || !ok || leader != m.from || epoch != m.answer.LeaderEpoch {
		return nil
	}
	a := m.answer
	if a.Diverging {
		to := TruncationPoint(a.DivergingEpoch, a.DivergingEnd, n.log.endOffsetFor)
		if to > n.log.end() {
			return fmt.Errorf("node %d told to truncate to %d, past its log end %d", n.id, to, n.log.end())
		}
		w.logf("node %d truncates from %d to %d", n.id, n.log.end(), to)
		w.stats.truncations++
		n.log.truncate(to)
		n.writers = n.log.writerTable()
		n.core.Truncated(to)
		return nil
	}
	if a.From != n.log.end() {
		return nil
	}
	if err := n.log.append(m.entries); err != nil {
		return fmt.Errorf("node %d appending a fetch answer: %w", n.id, err)
	}
	record(n.writers, m.entries, a.From)
	n.fetching = true
	n.fetched = &simFetched{leader: m.from, epoch: a.LeaderEpoch, hw: a.HW}
	if w.rng.IntN(2) == 0 {
		return w.sync(n)
	}
	return nil
}

// produce appends an acks=all write of 1–3 records on n if it leads.
func (w *simWorld) produce(n *simNode) {
	epoch, err := n.core.CheckWrite(AcksAll)
	if err != nil {
		return
	}
	wr := simWrite{node: n.id, run: n.run, epoch: epoch, first: n.log.end()}
	for range 1 + w.rng.IntN(3) {
		w.nextData++
		wr.entries = append(wr.entries, simEntry{epoch: epoch, data: w.nextData})
	}
	wr.last = wr.first + int64(len(wr.entries)) - 1
	// Appending in the epoch the core admitted cannot fail: the log's
	// latest epoch is the one the leader started.
	if err := n.log.append(wr.entries); err != nil {
		panic(err)
	}
	w.writes = append(w.writes, wr)
	w.logf("node %d appends [%d,%d] in epoch %d", n.id, wr.first, wr.last, epoch)
}

// crash stops n: the unsynced tail, the core and every message to it are
// lost.
func (w *simWorld) crash(n *simNode, wipe bool) {
	n.up, n.paused, n.core, n.run, n.proc = false, false, nil, 0, 0
	n.fetching, n.fetched = false, nil
	n.writers, n.turns, n.stalled = nil, nil, false
	for _, wr := range w.writers {
		if c := wr.conns[n.id]; c != nil && !c.broken {
			w.breakConn(c)
		}
	}
	n.log.crash()
	if wipe {
		n.wipedLogs = append(n.wipedLogs, n.log)
		n.log = &simLog{}
		n.incarnation++
	}
	w.net = slices.DeleteFunc(w.net, func(m simMsg) bool { return m.to == n.id })
	w.logf("node %d crashes (wipe %v), log recovered to %d", n.id, wipe, n.log.end())
}

// restart opens n's log, registers it (a node epoch, a new incarnation if
// wiped) and starts its core; with stale, the core first sees an old image
// of the bucket, as a node that re-opened with the last image it had.
func (w *simWorld) restart(n *simNode, stale bool) error {
	w.nextRun++
	n.up, n.run, n.proc, n.metaIndex = true, w.nextRun, w.nextRun, 0
	index, img := w.ctrl.register(n.id, n.incarnation)
	n.nodeEpoch = index
	w.logf("node %d restarts as run %d, node epoch %d, log end %d", n.id, n.run, index, n.log.end())
	if n.holds {
		w.openReplica(n)
	}
	if stale && n.core != nil {
		old := w.ctrl.images[max(0, len(w.ctrl.images)-1-1-w.rng.IntN(8))]
		if err := w.applyMeta(n, old, true); err != nil {
			return err
		}
	}
	w.broadcast(img)
	return nil
}
