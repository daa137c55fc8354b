package metastate

import (
	"cmp"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// PlanBucket is a bucket as the move planner sees it.
type PlanBucket struct {
	TableID uint64
	Bucket  int32
	// Replicas are the bucket's replicas, preferred leader first.
	Replicas []uint32
	// Replication is its table's replication.
	Replication int
	// Busy: the bucket moves already or waits for a turn. Its replicas
	// (the move's target) count for the nodes' load, and the plan leaves
	// it alone.
	Busy bool
}

// PlanRequest says what a plan of moves is for.
type PlanRequest struct {
	// Nodes are the nodes replicas may move to: the live tablet nodes
	// neither draining nor decommissioning.
	Nodes []PlacementNode
	// Racks are the racks of nodes outside Nodes that hold replicas (a
	// dead node's replica still takes its rack); a node in neither is a
	// rack of its own.
	Racks map[uint32]string
	// Evacuate are nodes every replica must leave.
	Evacuate []uint32
	// Balance evens out replicas, then preferred leaders, over Nodes.
	Balance bool
}

// PlannedMove is one bucket's move in a plan: from its replicas to a
// target, preferred leader first.
type PlannedMove struct {
	TableID uint64
	Bucket  int32
	From    []uint32
	To      []uint32
}

// PlanMoves plans the moves that bring buckets where req asks. It is a
// pure function: the same arguments give the same plan, and planning again
// from the plan's result gives no move (the tests check both).
//
//  1. Repair, bucket by bucket in the order given: each replica on a node
//     to evacuate is replaced in its place (so a preferred leader's
//     replacement is preferred), and a bucket with fewer replicas than its
//     replication gets more, each chosen as Place chooses a follower: a
//     node in a rack the bucket does not use yet if there is one, then the
//     fewest replicas, the most leaders, the lowest id. A bucket nothing
//     can repair (too few nodes) keeps what it has.
//  2. Balance replicas: while the most loaded node of Nodes holds two
//     replicas more than the least loaded, one of its buckets that the
//     other lacks moves there, if that does not narrow the racks the
//     bucket spans; a bucket it does not lead goes first, so leaders stay
//     put. The most and least loaded pair that can move is taken each
//     time; without racks one always can, so counts end within one.
//  3. Balance leaders: while a node prefers to lead two buckets more than
//     another, a bucket it prefers that the other holds swaps the two in
//     its replica list (no data moves).
//
// Replicas on nodes outside Nodes and not evacuated (dead ones, say) stay
// where they are and count for no node's load.
func PlanMoves(req PlanRequest, buckets []PlanBucket) []PlannedMove {
	p := newPlanner(req, buckets)
	for i, b := range buckets {
		if !b.Busy {
			p.repair(i)
		}
	}
	if req.Balance {
		for p.moveOneReplica() {
		}
		for p.moveOneLeader() {
		}
	}
	var out []PlannedMove
	for i, b := range buckets {
		if !slices.Equal(p.cur[i], b.Replicas) {
			out = append(out, PlannedMove{TableID: b.TableID, Bucket: b.Bucket, From: slices.Clone(b.Replicas), To: p.cur[i]})
		}
	}
	return out
}

// planner is a plan under way: each bucket's replicas as planned so far
// and the load they give Nodes.
type planner struct {
	req   PlanRequest
	cands []*candidate // Nodes, by id
	byID  map[uint32]*candidate
	cur   [][]uint32
	want  []int
	busy  []bool
	// steps bounds the balancing loops: each step moves a replica or a
	// leader from a node to one holding at least two fewer, so the counts'
	// sum of squares falls and the loops end; the bound only guards
	// against a mistake in that reasoning.
	steps int
}

func newPlanner(req PlanRequest, buckets []PlanBucket) *planner {
	p := &planner{req: req, byID: map[uint32]*candidate{}}
	for _, n := range req.Nodes {
		if _, dup := p.byID[n.ID]; dup || slices.Contains(req.Evacuate, n.ID) {
			continue
		}
		c := &candidate{id: n.ID, rack: rackName(n.ID, n.Rack)}
		p.byID[n.ID] = c
		p.cands = append(p.cands, c)
	}
	slices.SortFunc(p.cands, func(a, b *candidate) int { return cmp.Compare(a.id, b.id) })
	p.cur = make([][]uint32, len(buckets))
	p.want = make([]int, len(buckets))
	p.busy = make([]bool, len(buckets))
	for i, b := range buckets {
		p.cur[i] = slices.Clone(b.Replicas)
		p.want[i], p.busy[i] = b.Replication, b.Busy
		p.count(p.cur[i], +1)
		p.steps += 2 * (len(b.Replicas) + b.Replication)
	}
	return p
}

// rackName is a node's rack for spreading; a node without one is a rack
// of its own (NUL never starts a real rack name).
func rackName(id uint32, rack string) string {
	if rack == "" {
		return "\x00" + strconv.FormatUint(uint64(id), 10)
	}
	return rack
}

// rackOf is node id's rack.
func (p *planner) rackOf(id uint32) string {
	if c := p.byID[id]; c != nil {
		return c.rack
	}
	return rackName(id, p.req.Racks[id])
}

// count adds d to the load replicas give their nodes.
func (p *planner) count(replicas []uint32, d int) {
	for i, r := range replicas {
		if c := p.byID[r]; c != nil {
			c.replicas += d
			if i == 0 {
				c.leaders += d
			}
		}
	}
}

// racks is the number of distinct racks replicas span.
func (p *planner) racks(replicas []uint32) int {
	seen := map[string]bool{}
	for _, r := range replicas {
		seen[p.rackOf(r)] = true
	}
	return len(seen)
}

// repair is step 1 for bucket i.
func (p *planner) repair(i int) {
	cur := p.cur[i]
	p.count(cur, -1)
	for j, r := range cur {
		if slices.Contains(p.req.Evacuate, r) {
			if c := p.follower(cur, j); c != nil {
				cur[j] = c.id
			}
		}
	}
	for len(cur) < p.want[i] {
		c := p.follower(cur, -1)
		if c == nil {
			break
		}
		cur = append(cur, c.id)
	}
	p.cur[i] = cur
	p.count(cur, +1)
}

// follower chooses a node for a bucket with replicas, in place of
// replicas[skip] (skip -1: an added replica), as Place chooses followers.
func (p *planner) follower(replicas []uint32, skip int) *candidate {
	used := map[string]bool{}
	for j, r := range replicas {
		if j != skip {
			used[p.rackOf(r)] = true
		}
	}
	var free []*candidate
	for _, c := range p.cands {
		if !slices.Contains(replicas, c.id) {
			free = append(free, c)
		}
	}
	if len(free) == 0 {
		return nil
	}
	return nextFollower(free, nil, used)
}

// moveOneReplica makes one move of step 2, and reports whether it could.
func (p *planner) moveOneReplica() bool {
	if p.steps--; p.steps < 0 {
		return false
	}
	byLoad := slices.Clone(p.cands)
	slices.SortStableFunc(byLoad, func(a, b *candidate) int { return a.replicas - b.replicas })
	for hi := len(byLoad) - 1; hi > 0; hi-- {
		donor := byLoad[hi]
		for _, to := range byLoad[:hi] {
			if donor.replicas-to.replicas < 2 {
				break
			}
			if i, j := p.replicaToMove(donor.id, to.id); i >= 0 {
				p.count(p.cur[i], -1)
				p.cur[i][j] = to.id
				p.count(p.cur[i], +1)
				return true
			}
		}
	}
	return false
}

// replicaToMove finds a bucket whose replica on node from can move to node
// to without narrowing its racks, one from does not lead first: its index
// and the replica's position, or -1.
func (p *planner) replicaToMove(from, to uint32) (int, int) {
	bi, bj := -1, -1
	for i, cur := range p.cur {
		j := slices.Index(cur, from)
		if j < 0 || p.busy[i] || slices.Contains(cur, to) {
			continue
		}
		before := p.racks(cur)
		cur[j] = to
		after := p.racks(cur)
		cur[j] = from
		if after < before {
			continue
		}
		if j > 0 {
			return i, j
		}
		if bi < 0 {
			bi, bj = i, j
		}
	}
	return bi, bj
}

// moveOneLeader makes one swap of step 3, and reports whether it could.
func (p *planner) moveOneLeader() bool {
	if p.steps--; p.steps < 0 {
		return false
	}
	byLeaders := slices.Clone(p.cands)
	slices.SortStableFunc(byLeaders, func(a, b *candidate) int { return a.leaders - b.leaders })
	for hi := len(byLeaders) - 1; hi > 0; hi-- {
		donor := byLeaders[hi]
		for _, to := range byLeaders[:hi] {
			if donor.leaders-to.leaders < 2 {
				break
			}
			for i, cur := range p.cur {
				if len(cur) == 0 || p.busy[i] || cur[0] != donor.id {
					continue
				}
				if j := slices.Index(cur, to.id); j > 0 {
					p.count(cur, -1)
					cur[0], cur[j] = cur[j], cur[0]
					p.count(cur, +1)
					p.cur[i] = cur
					return true
				}
			}
		}
	}
	return false
}

// PlanInput reads what PlanMoves needs from the state: the tablet nodes
// in live that are neither draining nor decommissioning, the racks of the
// others, the decommissioning nodes to evacuate, and every bucket with its
// table's replication, busy when it moves, waits for a turn (with its
// move's target as replicas) or has no leader, in table and bucket order.
func (v *View) PlanInput(live []uint32, balance bool) (PlanRequest, []PlanBucket, error) {
	req := PlanRequest{Racks: map[uint32]string{}, Balance: balance}
	nodes, err := tabletNodes(v.tx)
	if err != nil {
		return req, nil, err
	}
	for _, n := range nodes {
		switch {
		case n.GetDecommissioning():
			req.Evacuate = append(req.Evacuate, n.GetId())
			req.Racks[n.GetId()] = n.GetRack()
		case n.GetDraining() || !slices.Contains(live, n.GetId()):
			req.Racks[n.GetId()] = n.GetRack()
		default:
			req.Nodes = append(req.Nodes, PlacementNode{ID: n.GetId(), Rack: n.GetRack()})
		}
	}
	tables, err := tablesByID(v.tx)
	if err != nil {
		return req, nil, err
	}
	plan, err := readMovePlan(v.tx)
	if err != nil {
		return req, nil, err
	}
	queued := map[string]bool{}
	for _, m := range plan.GetQueued() {
		queued[string(bucketKey(m.GetTableId(), m.GetBucket()))] = true
	}
	var buckets []PlanBucket
	err = v.tx.Bucket(bucketBuckets).ForEach(func(k, val []byte) error {
		b := &pb.BucketRecord{}
		if err := proto.Unmarshal(val, b); err != nil {
			return corruptRecord(k, err)
		}
		t := tables[b.GetTableId()]
		if t == nil {
			return nil
		}
		pbk := PlanBucket{TableID: b.GetTableId(), Bucket: b.GetBucket(), Replicas: b.GetReplicas(),
			Replication: int(t.GetReplication()), Busy: queued[string(k)]}
		if m := b.GetMove(); m != nil {
			pbk.Replicas, pbk.Busy = m.GetTarget(), true
		}
		// An offline bucket has no leader to copy from: it waits until an
		// in-sync replica is back.
		pbk.Busy = pbk.Busy || b.GetLeader() == 0
		buckets = append(buckets, pbk)
		return nil
	})
	return req, buckets, err
}
