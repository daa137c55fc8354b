package replication

import (
	"fmt"
	"slices"
)

// simController is the metadata Raft state machine's rules for one bucket,
// as docs/replication.md states them (the state machine itself lives in
// raftmeta/metastate; this is a model of its rules, not a copy of it): every
// command takes a Raft index; registration indexes are node epochs (tablet
// nodes 1); elections pick the first ISR member in assignment order that is
// not gone (tablet nodes 3); AdjustIsr is a compare-and-set on the leader
// and both epochs (metadata 4), deduplicated by request id (metadata 2).
type simController struct {
	index int64
	// The bucket as committed.
	leader      uint32
	leaderEpoch int32
	bucketEpoch int32
	replicas    []uint32
	isr         []uint32
	// original is the replica set a move in progress started from (nil:
	// no move); target the one it moves to. While it runs, replicas is
	// target then the replicas leaving, and the ones joining are learners
	// until they enter the ISR.
	original, target []uint32
	// regs holds each node's registration, by id.
	regs map[uint32]simRegistration
	// suspected: gossip reports the node dead (rightly or not).
	suspected map[uint32]bool
	// answers remembers the result of every AdjustIsr request id.
	answers map[string]simAdjustResult
	// images is every committed state of the bucket, by index order.
	images []simImage
}

type simRegistration struct {
	nodeEpoch   int64
	incarnation int
}

// simImage is the bucket as committed at a Raft index.
type simImage struct {
	index int64
	a     Assignment
}

type simAdjustResult struct {
	outcome Outcome
	a       Assignment
	why     string
}

func newSimController(replicas []uint32) *simController {
	c := &simController{leader: replicas[0], replicas: replicas, isr: slices.Clone(replicas),
		regs: map[uint32]simRegistration{}, suspected: map[uint32]bool{}, answers: map[string]simAdjustResult{}}
	for _, id := range replicas {
		c.index++
		c.regs[id] = simRegistration{nodeEpoch: c.index, incarnation: 1}
	}
	c.commit()
	return c
}

func (c *simController) assignment() Assignment {
	return Assignment{Leader: c.leader, LeaderEpoch: c.leaderEpoch, BucketEpoch: c.bucketEpoch,
		Replicas: slices.Clone(c.replicas), ISR: slices.Clone(c.isr)}
}

// commit records the bucket as of the current index.
func (c *simController) commit() simImage {
	a := c.assignment()
	a.Index = c.index
	img := simImage{index: c.index, a: a}
	c.images = append(c.images, img)
	return img
}

// register applies a RegisterNode: the index is the node's epoch. A new
// incarnation (wiped folder) lost its replicas: it leaves the ISR even as
// its last member, and a bucket it led moves to another ISR member or goes
// offline. A restart with the same folder keeps its place, but a bucket it
// leads gets a new leader epoch (it may have lost an unsynced tail its
// followers copied).
func (c *simController) register(id uint32, incarnation int) (int64, simImage) {
	c.index++
	old := c.regs[id]
	c.regs[id] = simRegistration{nodeEpoch: c.index, incarnation: incarnation}
	switch {
	case old.incarnation != incarnation && (c.leader == id || slices.Contains(c.isr, id)):
		wasLeader := c.leader == id
		c.isr = slices.DeleteFunc(c.isr, func(r uint32) bool { return r == id })
		c.bucketEpoch++
		if wasLeader {
			c.leader = c.electable(func(r uint32) bool { return r == id || c.suspected[r] })
			c.leaderEpoch++
		}
	case c.leader == id:
		c.leaderEpoch++
		c.bucketEpoch++
	}
	return c.index, c.commit()
}

// fence applies the controller's list of gone nodes (the suspected ones):
// a gone leader is replaced by the first ISR member in assignment order
// that is not gone, or the bucket goes offline keeping its ISR; an offline
// bucket gets such a leader when one exists; gone followers leave the ISR,
// never its last member. It reports whether anything changed.
func (c *simController) fence() (simImage, bool) {
	gone := func(r uint32) bool { return c.suspected[r] }
	if (c.leader != 0 && gone(c.leader)) || c.leader == 0 {
		next := c.electable(gone)
		if c.leader == 0 && next == 0 {
			return simImage{}, false
		}
		c.index++
		c.leader = next
		c.leaderEpoch++
		c.bucketEpoch++
		if next != 0 {
			c.isr = slices.DeleteFunc(c.isr, gone)
		}
		return c.commit(), true
	}
	isr := slices.DeleteFunc(slices.Clone(c.isr), func(r uint32) bool { return r != c.leader && gone(r) })
	if len(isr) == len(c.isr) || len(isr) == 0 {
		return simImage{}, false
	}
	c.index++
	c.isr = isr
	c.bucketEpoch++
	return c.commit(), true
}

func (c *simController) electable(gone func(uint32) bool) uint32 {
	for _, r := range c.replicas {
		if slices.Contains(c.isr, r) && !gone(r) {
			return r
		}
	}
	return 0
}

// startMove applies a move of the bucket to target (docs/replication.md,
// moving replicas 1): the replicas joining fetch as learners, nothing else
// changes yet. Refused while another move runs.
func (c *simController) startMove(target []uint32) (simImage, bool) {
	if c.original != nil || len(target) == 0 || slices.Equal(target, c.replicas) {
		return simImage{}, false
	}
	c.index++
	c.original, c.target = slices.Clone(c.replicas), slices.Clone(target)
	c.replicas = c.union(target, c.original)
	c.isr = inAssignmentOrder(c.replicas, c.isr)
	c.bucketEpoch++
	return c.commit(), true
}

// union is a's members in order, then b's that a lacks.
func (c *simController) union(a, b []uint32) []uint32 {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// completeMove finishes the move once every target replica is in the ISR
// (moving replicas 2): the replicas become the target, the ones leaving
// leave the ISR with it, and leadership moves to the first in-sync target
// replica not gone if the leader leaves. Removing a replica raises the
// leader epoch even when the leader stays, so nothing a removed replica
// sent in the old epoch (a late fetch, above all) is taken for the
// fetches of a replica added again later with an empty log.
func (c *simController) completeMove() (simImage, bool) {
	if c.original == nil || c.leader == 0 {
		return simImage{}, false
	}
	for _, r := range c.target {
		if !slices.Contains(c.isr, r) {
			return simImage{}, false
		}
	}
	leader := c.leader
	if !slices.Contains(c.target, leader) {
		leader = 0
		for _, r := range c.target {
			if !c.suspected[r] {
				leader = r
				break
			}
		}
		if leader == 0 {
			return simImage{}, false
		}
	}
	return c.endMove(c.target, leader), true
}

// cancelMove goes back to the original replicas (moving replicas 3): the
// learners leave, and so does a leader that is one of them, for the first
// in-sync original replica not gone. Refused when no original replica is
// in the ISR: then only finishing the move keeps the data.
func (c *simController) cancelMove() (simImage, bool) {
	if c.original == nil {
		return simImage{}, false
	}
	isr := inAssignmentOrder(c.original, c.isr)
	if len(isr) == 0 {
		return simImage{}, false
	}
	leader := c.leader
	if leader != 0 && !slices.Contains(c.original, leader) {
		leader = 0
		for _, r := range isr {
			if !c.suspected[r] {
				leader = r
				break
			}
		}
		if leader == 0 {
			return simImage{}, false
		}
	}
	return c.endMove(c.original, leader), true
}

// endMove makes replicas the bucket's replicas, led by leader.
func (c *simController) endMove(replicas []uint32, leader uint32) simImage {
	c.index++
	removed := slices.ContainsFunc(c.replicas, func(r uint32) bool { return !slices.Contains(replicas, r) })
	if leader != c.leader || (removed && c.leader != 0) {
		c.leaderEpoch++
	}
	c.leader = leader
	c.replicas = slices.Clone(replicas)
	c.isr = inAssignmentOrder(replicas, c.isr)
	c.original, c.target = nil, nil
	c.bucketEpoch++
	return c.commit()
}

// simAdjust is an AdjustIsr request as it travels.
type simAdjust struct {
	requestID   string
	leaderID    uint32
	proposalID  uint64
	leaderEpoch int32
	bucketEpoch int32
	isr         []uint32
	nodeEpochs  []int64
}

// adjustIsr applies an AdjustIsr. A request id seen before is answered
// with its first result and changes nothing ("applied twice" never
// happens). It reports whether the bucket changed.
func (c *simController) adjustIsr(req simAdjust) (simAdjustResult, simImage, bool) {
	if r, ok := c.answers[req.requestID]; ok {
		return r, simImage{}, false
	}
	c.index++
	r := c.applyAdjust(req)
	c.answers[req.requestID] = r
	if r.outcome != Committed || r.a.BucketEpoch == req.bucketEpoch {
		return r, simImage{}, false
	}
	return r, c.commit(), true
}

func (c *simController) applyAdjust(req simAdjust) simAdjustResult {
	refuse := func(format string, args ...any) simAdjustResult {
		return simAdjustResult{outcome: Refused, why: fmt.Sprintf(format, args...)}
	}
	fence := func(format string, args ...any) simAdjustResult {
		return simAdjustResult{outcome: Fenced, why: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.leader == 0 || req.leaderID != c.leader:
		return fence("fenced: node %d is not the leader (%d is)", req.leaderID, c.leader)
	case req.leaderEpoch != c.leaderEpoch:
		return fence("fenced: leader epoch %d, current %d", req.leaderEpoch, c.leaderEpoch)
	case req.bucketEpoch != c.bucketEpoch:
		return fence("fenced: bucket epoch %d, current %d", req.bucketEpoch, c.bucketEpoch)
	case len(req.isr) == 0 || !slices.Contains(req.isr, c.leader):
		return refuse("invalid: ISR %v leaves out the leader %d", req.isr, c.leader)
	}
	for i, id := range req.isr {
		if !slices.Contains(c.replicas, id) || slices.Contains(req.isr[:i], id) {
			return refuse("invalid: ISR %v", req.isr)
		}
	}
	if len(req.nodeEpochs) != len(req.isr) {
		return refuse("invalid: node epochs %v for ISR %v", req.nodeEpochs, req.isr)
	}
	for i, id := range req.isr {
		// KIP-903: a member added must be the run whose fetches made it
		// eligible, not a node registered (maybe wiped) since.
		if e := c.regs[id].nodeEpoch; !slices.Contains(c.isr, id) && req.nodeEpochs[i] != e {
			return refuse("ineligible: node %d at node epoch %d, registered at %d", id, req.nodeEpochs[i], e)
		}
	}
	isr := inAssignmentOrder(c.replicas, req.isr)
	if !slices.Equal(isr, c.isr) {
		c.isr = isr
		c.bucketEpoch++
	}
	return simAdjustResult{outcome: Committed, a: c.assignment()}
}
