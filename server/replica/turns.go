package replica

import "sync"

// Client writes of a bucket reach the leader's write path (produceMu) in
// the order of their turns. A write call on a node's ordered stream takes
// its turn as the call arrives, before its batch is checked, so that a
// writer's pipelined batches are decided in the order it sent them even
// though each is checked and answered on a goroutine of its own; a unary
// call takes its turn when it reaches the write path.

// turnGate hands out turns and lets them go one at a time, in order.
type turnGate struct {
	mu      sync.Mutex
	next    uint64                   // the next turn to hand out
	serving uint64                   // the turn that may go now
	waiting map[uint64]chan struct{} // turns waiting for serving to reach them
}

func (g *turnGate) take() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.next
	g.next++
	return n
}

// wait blocks until turn n may go. Every turn taken must wait and then
// pass, once: the turns after it wait for that.
func (g *turnGate) wait(n uint64) {
	g.mu.Lock()
	if g.serving == n {
		g.mu.Unlock()
		return
	}
	if g.serving > n {
		g.mu.Unlock()
		panic("replica: a write turn waited twice")
	}
	if g.waiting == nil {
		g.waiting = map[uint64]chan struct{}{}
	}
	ch := make(chan struct{})
	g.waiting[n] = ch
	g.mu.Unlock()
	<-ch
}

// pass ends the serving turn and lets the next one go.
func (g *turnGate) pass() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.serving++
	if ch, ok := g.waiting[g.serving]; ok {
		delete(g.waiting, g.serving)
		close(ch)
	}
}

// A Turn is one client write's place in its bucket's order of writes,
// with what the write claims of its writer's batches before it.
type Turn struct {
	gate *turnGate
	n    uint64
	used bool
	// pipelined: the writer has an earlier batch in the bucket not yet
	// acknowledged (ProduceRequest.pipelined).
	pipelined bool
}

// TakeTurn takes the next turn of the replica's client writes. The write
// must use it (Write, or the produce path) or Forgo it, from any
// goroutine.
func (r *Replica) TakeTurn(pipelined bool) *Turn {
	return &Turn{gate: &r.turns, n: r.turns.take(), pipelined: pipelined}
}

// run waits for the turn and runs fn under r's produceMu, letting the
// next turn go once it holds the lock: the next write then waits for
// produceMu behind this one.
func (t *Turn) run(r *Replica, fn func()) {
	if t.used {
		panic("replica: a write turn used twice")
	}
	t.used = true
	t.gate.wait(t.n)
	r.produceMu.Lock()
	defer r.produceMu.Unlock()
	t.gate.pass()
	fn()
}

// Forgo gives up a turn the write did not use (it failed before the write
// path): it waits for the turn and passes it on. A used turn is left
// alone, so a deferred Forgo is always safe.
func (t *Turn) Forgo() {
	if t == nil || t.used {
		return
	}
	t.used = true
	t.gate.wait(t.n)
	t.gate.pass()
}
