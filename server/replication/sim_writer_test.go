package replication

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/writeseq"
)

// The simulation's idempotent writers: each drives the client's real
// sequencing rules (writeseq.Window) and sends its batches to the node it
// believes leads, over one ordered connection per node. A connection
// delivers its calls in the order they were sent; each delivered call takes
// its turn at the node as it arrives, and the node decides the calls in
// turn order (docs/replication.md, produce 5) with the real core and the
// real writer table. Answers come back in any order, late, or never. A
// connection may break: its undelivered calls are lost, every call out on
// it fails as retriable at the writer, and the calls the node already took
// are still decided (their answers are lost with the connection).

// simWriter is one idempotent writer of the bucket.
type simWriter struct {
	id       int
	win      *writeseq.Window[*simBatch]
	sharedID int64
	leader   uint32 // the node it believes leads; 0: none known
	conns    map[uint32]*simConn
	pending  []*simBatch // written, waiting for room in the window
	// ackedSeqs holds, by writer id, the base offset of every sequence a
	// node acknowledged.
	ackedSeqs map[int64]map[int32]int64
}

type simFlight = writeseq.Flight[*simBatch]

// simBatch is the rows of one batch of a writer (their data ids), kept
// across resends and re-sequencing.
type simBatch struct {
	data    []uint64
	created time.Time
	seqs    int      // how often it was sequenced
	conn    *simConn // the connection its last call went on
}

// simConn is one ordered connection of a writer to a node.
type simConn struct {
	writer  *simWriter
	node    uint32
	id      int
	broken  bool
	transit []simCall // sent, not delivered yet, in order
	replies []simReply
	out     map[uint64]*simFlight // calls sent on it and not answered
}

// simCall is one write call of a writer's batch.
type simCall struct {
	conn      *simConn
	f         *simFlight
	call      uint64
	writerID  int64
	seq       int32
	pipelined bool
	data      []uint64
}

// simReply is a node's answer to a call.
type simReply struct {
	call       uint64
	f          *simFlight
	outcome    writeseq.Outcome
	err        error
	base, last int64
}

var (
	errSimNoLeader   = errors.New("sim: no leader known")
	errSimConnBroken = errors.New("sim: connection broke")
)

// newWriters starts 1–3 writers; calls time out after 4–12 s, batches
// after 30–120 s.
func (w *simWorld) newWriters() {
	cfg := writeseq.Config{
		MaxInFlight:    1 + w.rng.IntN(writeseq.MaxInFlight),
		RequestTimeout: time.Duration(20+w.rng.IntN(41)) * time.Second,
		CallGrace:      500 * time.Millisecond,
		Backoff:        backoff.Backoff{Min: 50 * time.Millisecond, Max: time.Second},
	}
	w.deliveryTimeout = time.Duration(30+w.rng.IntN(91)) * time.Second
	for i := range 1 + w.rng.IntN(3) {
		w.nextWriterID++
		w.writers = append(w.writers, &simWriter{id: i + 1, win: writeseq.New[*simBatch](cfg), sharedID: w.nextWriterID,
			leader: w.ctrl.leader, conns: map[uint32]*simConn{}, ackedSeqs: map[int64]map[int32]int64{}})
	}
	w.logf("%d writers, max in flight %d, request timeout %v, delivery timeout %v", len(w.writers), cfg.MaxInFlight,
		cfg.RequestTimeout, w.deliveryTimeout)
}

// lookupLeader is where a writer's metadata refresh says the leader is:
// the controller's leader, or now and then a stale answer.
func (w *simWorld) lookupLeader() uint32 {
	if w.rng.IntN(4) == 0 {
		return uint32(1 + w.rng.IntN(len(w.nodes)))
	}
	return w.ctrl.leader
}

// writeBatch gives a writer a new batch of 1–3 rows.
func (w *simWorld) writeBatch(wr *simWriter) {
	if len(wr.pending) >= 8 {
		return
	}
	b := &simBatch{created: w.now}
	for range 1 + w.rng.IntN(3) {
		w.nextData++
		b.data = append(b.data, w.nextData)
	}
	wr.pending = append(wr.pending, b)
	w.logf("writer %d writes rows %v", wr.id, b.data)
}

// writerStep runs a writer's sender once: give up calls past their time,
// admit, sequence, send what the window lets go, complete.
func (w *simWorld) writerStep(wr *simWriter) {
	for _, f := range wr.win.Expire(w.now) {
		if c := f.Item.conn; c != nil && !c.broken {
			w.logf("writer %d: call for %d/%d times out", wr.id, f.WriterID(), f.Seq())
			w.breakConn(c)
		}
		w.answer(wr, f, f.Call(), writeseq.TimedOut, errSimCallTimeout)
	}
	for len(wr.pending) > 0 && wr.win.Room() {
		b := wr.pending[0]
		wr.pending = wr.pending[1:]
		wr.win.Add(b, b.created.Add(w.deliveryTimeout))
	}
	for f := wr.win.ToSequence(); f != nil; f = wr.win.ToSequence() {
		if id, _, fresh := wr.win.WriterID(); id < 0 {
			if fresh {
				w.nextWriterID++
				id = w.nextWriterID
			} else {
				id = wr.sharedID
			}
			wr.win.SetWriterID(id)
		}
		if f.Item.seqs > 0 {
			w.stats.resequenced++
		}
		f.Item.seqs++
		wr.win.Sequence(f)
	}
	var noLeader []*simFlight
	for _, f := range wr.win.ToSend(w.now) {
		w.stats.calls++
		if f.Attempts() > 1 {
			w.stats.resent++
		}
		if wr.leader == 0 {
			noLeader = append(noLeader, f)
			continue
		}
		c := wr.conns[wr.leader]
		if c == nil || c.broken {
			w.nextConn++
			c = &simConn{writer: wr, node: wr.leader, id: w.nextConn, out: map[uint64]*simFlight{}}
			wr.conns[wr.leader] = c
		}
		call := simCall{conn: c, f: f, call: f.Call(), writerID: f.WriterID(), seq: f.Seq(), pipelined: f.Pipelined(), data: f.Item.data}
		c.transit = append(c.transit, call)
		c.out[call.call] = f
		f.Item.conn = c
		w.logf("writer %d sends %d/%d (pipelined %v, attempt %d) to node %d on connection %d", wr.id, call.writerID, call.seq,
			call.pipelined, f.Attempts(), c.node, c.id)
	}
	for _, f := range noLeader {
		w.answer(wr, f, f.Call(), writeseq.Retriable, errSimNoLeader)
	}
	for _, f := range wr.win.PopCompleted() {
		if f.Acked() {
			w.stats.writerAcked++
		} else {
			w.stats.writerFailed++
		}
	}
}

// errSimCallTimeout is what a call given up on fails with.
var errSimCallTimeout = errors.New("sim: no answer in time")

// answer gives a writer's window a call's outcome; a retriable failure
// refreshes where the writer believes the leader is.
func (w *simWorld) answer(wr *simWriter, f *simFlight, call uint64, o writeseq.Outcome, err error) {
	if o == writeseq.OutOfOrder {
		w.stats.outOfOrder++
	}
	w.logf("writer %d: call %d for %d/%d answered %s %v", wr.id, call, f.WriterID(), f.Seq(), outcomeWord(o), err)
	if wr.win.Answer(f, call, o, err, w.now) {
		wr.leader = w.lookupLeader()
	}
}

// breakConn breaks a connection: what it had not delivered is lost, and
// every call out on it fails as retriable.
func (w *simWorld) breakConn(c *simConn) {
	c.broken = true
	c.transit, c.replies = nil, nil
	calls := make([]uint64, 0, len(c.out))
	for call := range c.out {
		calls = append(calls, call)
	}
	slices.Sort(calls)
	w.logf("connection %d of writer %d to node %d breaks, %d calls out", c.id, c.writer.id, c.node, len(calls))
	for _, call := range calls {
		f := c.out[call]
		delete(c.out, call)
		w.answer(c.writer, f, call, writeseq.Retriable, errSimConnBroken)
	}
}

// openConns lists every open connection that satisfies ok.
func (w *simWorld) openConns(ok func(*simConn) bool) []*simConn {
	var cs []*simConn
	for _, wr := range w.writers {
		for _, id := range slices.Sorted(maps.Keys(wr.conns)) {
			if c := wr.conns[id]; !c.broken && ok(c) {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// deliverCall delivers the next call of a random connection to its node,
// where it takes its turn, and returns the node.
func (w *simWorld) deliverCall() *simNode {
	cs := w.openConns(func(c *simConn) bool { return len(c.transit) > 0 && w.node(c.node).active() })
	if len(cs) == 0 {
		return nil
	}
	c := cs[w.rng.IntN(len(cs))]
	call := c.transit[0]
	c.transit = c.transit[1:]
	n := w.node(c.node)
	n.turns = append(n.turns, call)
	w.logf("node %d takes the turn of %d/%d from connection %d", n.id, call.writerID, call.seq, c.id)
	return n
}

// decide decides a node's oldest call that took its turn, as the replica
// does under its produce lock: leadership, then the writer table, then
// the append.
func (w *simWorld) decide(n *simNode) error {
	call := n.turns[0]
	n.turns = n.turns[1:]
	epoch, err := n.core.CheckWrite(AcksAll)
	if err != nil {
		w.reply(call, simReply{outcome: writeseq.Retriable, err: err})
		return nil
	}
	dup, err := n.writers.Check(call.writerID, call.seq, call.pipelined)
	if err != nil {
		w.logf("node %d refuses %d/%d: %v", n.id, call.writerID, call.seq, err)
		w.reply(call, simReply{outcome: writeseq.OutOfOrder, err: err})
		return nil
	}
	if dup != nil {
		if dup.Last >= n.log.end() {
			return fmt.Errorf("node %d: writer table names [%d,%d] for %d/%d, the log ends at %d", n.id, dup.Base, dup.Last,
				call.writerID, call.seq, n.log.end())
		}
		w.logf("node %d: %d/%d is a duplicate of [%d,%d]", n.id, call.writerID, call.seq, dup.Base, dup.Last)
		w.writes = append(w.writes, simWrite{node: n.id, run: n.run, epoch: epoch, first: dup.Base, last: dup.Last,
			entries: slices.Clone(n.log.entries[dup.Base : dup.Last+1]), call: &call, dup: true})
		return nil
	}
	wr := simWrite{node: n.id, run: n.run, epoch: epoch, first: n.log.end(), call: &call}
	for i, d := range call.data {
		wr.entries = append(wr.entries, simEntry{epoch: epoch, data: d, writer: call.writerID, seq: call.seq, pos: int8(i),
			size: int8(len(call.data))})
	}
	wr.last = wr.first + int64(len(wr.entries)) - 1
	if err := n.log.append(wr.entries); err != nil {
		panic(err)
	}
	n.writers.Remember(call.writerID, WriterBatch{Seq: call.seq, Base: wr.first, Last: wr.last})
	w.writes = append(w.writes, wr)
	w.logf("node %d appends %d/%d at [%d,%d] in epoch %d", n.id, call.writerID, call.seq, wr.first, wr.last, epoch)
	return nil
}

// reply puts a node's answer on the call's connection, unless it broke.
func (w *simWorld) reply(call simCall, r simReply) {
	if call.conn.broken {
		return
	}
	r.call, r.f = call.call, call.f
	call.conn.replies = append(call.conn.replies, r)
}

// deliverReply hands a random answer of a random connection to its
// writer (or loses it), and returns the writer.
func (w *simWorld) deliverReply(lose bool) *simWriter {
	cs := w.openConns(func(c *simConn) bool { return len(c.replies) > 0 })
	if len(cs) == 0 {
		return nil
	}
	c := cs[w.rng.IntN(len(cs))]
	i := w.rng.IntN(len(c.replies))
	r := c.replies[i]
	c.replies = slices.Delete(c.replies, i, i+1)
	if lose {
		w.logf("the answer to %d/%d on connection %d is lost", r.f.WriterID(), r.f.Seq(), c.id)
		return nil
	}
	delete(c.out, r.call)
	w.answer(c.writer, r.f, r.call, r.outcome, r.err)
	return c.writer
}

// ackWriterBatch checks a node's acknowledgement of a writer's batch: its
// offsets hold the batch's rows under its writer id and sequence, and its
// writer's acknowledged batches under one writer id are in sequence order.
func (w *simWorld) ackWriterBatch(wr simWrite) error {
	c := wr.call
	if int(wr.last-wr.first+1) != len(c.data) {
		return fmt.Errorf("%d/%d of %d rows acknowledged at [%d,%d]", c.writerID, c.seq, len(c.data), wr.first, wr.last)
	}
	for i, e := range wr.entries {
		if e.data != c.data[i] || e.writer != c.writerID || e.seq != c.seq {
			return fmt.Errorf("%d/%d acknowledged at [%d,%d], where offset %d holds %+v, not its row %d", c.writerID, c.seq,
				wr.first, wr.last, wr.first+int64(i), e, c.data[i])
		}
	}
	seqs := c.conn.writer.ackedSeqs[c.writerID]
	if seqs == nil {
		seqs = map[int32]int64{}
		c.conn.writer.ackedSeqs[c.writerID] = seqs
	}
	for seq, base := range seqs {
		if (seq == c.seq) != (base == wr.first) || (seq < c.seq) != (base < wr.first) {
			return fmt.Errorf("writer id %d: sequence %d acknowledged at %d, sequence %d at %d", c.writerID, seq, base, c.seq, wr.first)
		}
	}
	seqs[c.seq] = wr.first
	w.stats.serverAcks++
	return nil
}

func outcomeWord(o writeseq.Outcome) string {
	return [...]string{"ok", "duplicate", "retriable", "timed out", "out of order", "final"}[o]
}
