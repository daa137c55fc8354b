package metastate

import (
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Moving replicas (docs/replication.md, moving replicas). A move changes a
// bucket's replica set in two commits. MoveReplicas starts it: the
// replicas become the target's, in order, then the original ones that
// leave; the ISR is untouched, so the joining replicas are learners that
// fetch but count for neither acks nor the high watermark until the
// leader proposes them in by the usual rule. CompleteMove, once every
// target replica is in the ISR, makes the target the replica set: the
// leaving replicas leave the ISR in the same commit, leadership moves to
// the target if it must, and they delete their data only then. CancelMove
// goes back to the original set instead. The moves waiting for a turn and
// the bounds they run under live in the MovePlan, so a new controller
// carries on where the last one stopped.

// Bounds of moves.
const (
	// MaxMoveTarget bounds a target's replicas.
	MaxMoveTarget = 16
	// MaxMovesPerCommand bounds the moves one MoveReplicas names.
	MaxMovesPerCommand = 10_000
	// MaxQueuedMoves bounds the moves waiting for a turn.
	MaxQueuedMoves = 100_000
	// MaxRunningMoves bounds max_moves.
	MaxRunningMoves = 1_000
	// DefaultMaxMoves is how many moves run at once when no MoveReplicas
	// said.
	DefaultMaxMoves = 4
)

// keyMovePlan holds the MovePlan in the meta bucket.
var keyMovePlan = []byte("move_plan")

// movePlan reads the plan; the default one when none is stored.
func (a *applier) movePlan() (*pb.MovePlan, error) { return readMovePlan(a.tx) }

// MovePlan returns the cluster's move plan: the moves running and queued,
// and their bounds.
func (v *View) MovePlan() (*pb.MovePlan, error) { return readMovePlan(v.tx) }

func readMovePlan(tx *bolt.Tx) (*pb.MovePlan, error) {
	p := &pb.MovePlan{}
	v := tx.Bucket(bucketMeta).Get(keyMovePlan)
	if v == nil {
		p.MaxMoves = DefaultMaxMoves
		return p, nil
	}
	if err := proto.Unmarshal(v, p); err != nil {
		return nil, corruptRecord(keyMovePlan, err)
	}
	return p, nil
}

// putMovePlan stores the plan and lists it as changed.
func (a *applier) putMovePlan(p *pb.MovePlan) error {
	v, err := marshal.Marshal(p)
	if err != nil {
		return err
	}
	if err := a.tx.Bucket(bucketMeta).Put(keyMovePlan, v); err != nil {
		return err
	}
	a.changes.moveBounds = boundsOf(p)
	return nil
}

// boundsOf is p's bounds.
func boundsOf(p *pb.MovePlan) *pb.MoveBounds {
	return &pb.MoveBounds{ThrottleBytesPerS: p.GetThrottleBytesPerS(), MaxMoves: p.GetMaxMoves()}
}

// moveReplicas starts moves, or queues those beyond the plan's max_moves.
func (a *applier) moveReplicas(c *pb.MoveReplicas) (*pb.CommandResult, error) {
	switch {
	case len(c.GetMoves()) > MaxMovesPerCommand:
		return nil, errorf(codeInvalidRequest, "move replicas: %d moves exceed %d in one command", len(c.GetMoves()), MaxMovesPerCommand)
	case c.GetMaxMoves() < 0 || c.GetMaxMoves() > MaxRunningMoves:
		return nil, errorf(codeInvalidRequest, "move replicas: at most %d moves at once, want 1 to %d", c.GetMaxMoves(), MaxRunningMoves)
	case c.GetThrottleBytesPerS() < -1:
		return nil, errorf(codeInvalidRequest, "move replicas: throttle %d bytes/s", c.GetThrottleBytesPerS())
	}
	plan, err := a.movePlan()
	if err != nil {
		return nil, err
	}
	if err := a.pruneRunning(plan); err != nil {
		return nil, err
	}
	switch t := c.GetThrottleBytesPerS(); {
	case t == -1:
		plan.ThrottleBytesPerS = 0
	case t > 0:
		plan.ThrottleBytesPerS = t
	}
	if c.GetMaxMoves() > 0 {
		plan.MaxMoves = c.GetMaxMoves()
	}
	if len(plan.GetQueued())+len(c.GetMoves()) > MaxQueuedMoves {
		return nil, errorf(codeInvalidRequest, "move replicas: %d moves queued and %d more exceed %d", len(plan.GetQueued()),
			len(c.GetMoves()), MaxQueuedMoves)
	}
	nodes, err := listNodes(a.tx)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, q := range plan.GetQueued() {
		named[string(bucketKey(q.GetTableId(), q.GetBucket()))] = true
	}
	buckets := make([]*pb.BucketRecord, len(c.GetMoves()))
	for i, m := range c.GetMoves() {
		key := string(bucketKey(m.GetTableId(), m.GetBucket()))
		b, err := a.bucketRecord(m.GetTableId(), m.GetBucket())
		if err != nil {
			return nil, err
		}
		switch {
		case b.GetMove() != nil:
			return nil, errorf(codeAlreadyExists, "table %d bucket %d is moving already (to %v); cancel that move first",
				m.GetTableId(), m.GetBucket(), b.GetMove().GetTarget())
		case named[key]:
			return nil, errorf(codeAlreadyExists, "table %d bucket %d has a move queued already, or twice in this command",
				m.GetTableId(), m.GetBucket())
		}
		if err := checkTarget(b, m.GetTarget(), nodes); err != nil {
			return nil, err
		}
		named[key] = true
		buckets[i] = b
	}
	result := &pb.MoveResult{}
	for i, m := range c.GetMoves() {
		if len(plan.GetRunning()) >= int(plan.GetMaxMoves()) {
			plan.Queued = append(plan.Queued, proto.CloneOf(m))
			result.Queued = append(result.Queued, proto.CloneOf(m))
			continue
		}
		b := buckets[i]
		startMove(b, m.GetTarget(), c.GetNowMs())
		plan.Running = append(plan.Running, proto.CloneOf(m))
		if err := a.putBucket(b); err != nil {
			return nil, err
		}
		result.Buckets = append(result.Buckets, b)
	}
	if err := a.putMovePlan(plan); err != nil {
		return nil, err
	}
	result.Plan = plan
	return &pb.CommandResult{Value: &pb.CommandResult_Moves{Moves: result}}, nil
}

// checkTarget validates a move's target for bucket b: 1 to MaxMoveTarget
// distinct registered tablet nodes, none draining, other than b's
// replicas as they are.
func checkTarget(b *pb.BucketRecord, target []uint32, nodes []*pb.NodeRecord) error {
	if len(target) == 0 || len(target) > MaxMoveTarget {
		return errorf(codeInvalidRequest, "table %d bucket %d: a target of %d replicas, want 1 to %d",
			b.GetTableId(), b.GetBucket(), len(target), MaxMoveTarget)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d listed twice in the target", b.GetTableId(), b.GetBucket(), id)
		}
		j := slices.IndexFunc(nodes, func(n *pb.NodeRecord) bool { return n.GetId() == id })
		switch {
		case j < 0:
			return errorf(codeUnknownNode, "table %d bucket %d: node %d in the target is not registered", b.GetTableId(), b.GetBucket(), id)
		case !hasRole(nodes[j], RoleTablet):
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d in the target is not a tablet node", b.GetTableId(), b.GetBucket(), id)
		case nodes[j].GetDraining() && !slices.Contains(b.GetReplicas(), id):
			return errorf(codeInvalidRequest, "table %d bucket %d: node %d in the target is draining", b.GetTableId(), b.GetBucket(), id)
		}
	}
	if slices.Equal(target, b.GetReplicas()) {
		return errorf(codeAlreadyExists, "table %d bucket %d has the replicas %v already", b.GetTableId(), b.GetBucket(), target)
	}
	return nil
}

// startMove starts b's move to target, in place.
func startMove(b *pb.BucketRecord, target []uint32, nowMs int64) {
	b.Move = &pb.ReplicaMove{Original: slices.Clone(b.GetReplicas()), Target: slices.Clone(target), StartedAtMs: nowMs}
	b.Replicas = union(target, b.GetReplicas())
	b.Isr = inOrder(b.GetReplicas(), b.GetIsr())
	b.BucketEpoch++
}

// union is a's members in order, then b's that a lacks.
func union(a, b []uint32) []uint32 {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// inOrder is the members of ids that order holds, in order's order.
func inOrder(order, ids []uint32) []uint32 {
	out := make([]uint32, 0, len(ids))
	for _, r := range order {
		if slices.Contains(ids, r) {
			out = append(out, r)
		}
	}
	return out
}

// completeMove ends a bucket's move on its target.
func (a *applier) completeMove(c *pb.CompleteMove) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "complete move: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	b, err := a.bucketRecord(c.GetTableId(), c.GetBucket())
	if err != nil {
		return nil, err
	}
	m := b.GetMove()
	switch {
	case m == nil:
		return nil, errorf(codeInvalidRequest, "table %d bucket %d is not moving", c.GetTableId(), c.GetBucket())
	case c.GetBucketEpoch() != b.GetBucketEpoch():
		return nil, errorf(codeFenced, "table %d bucket %d: bucket epoch %d, current is %d",
			c.GetTableId(), c.GetBucket(), c.GetBucketEpoch(), b.GetBucketEpoch())
	}
	for _, id := range m.GetTarget() {
		if !slices.Contains(b.GetIsr(), id) {
			return nil, errorf(codeNotEnoughReplicas, "table %d bucket %d: node %d of the target is not in sync yet (ISR %v)",
				c.GetTableId(), c.GetBucket(), id, b.GetIsr())
		}
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	leader := b.GetLeader()
	if leader == 0 || !slices.Contains(m.GetTarget(), leader) {
		live := func(id uint32) bool { return slices.Contains(c.GetLiveNodes(), id) }
		if leader = preferred(m.GetTarget(), live, draining); leader == 0 {
			return nil, errorf(codeNotEnoughReplicas, "table %d bucket %d: no replica of the target %v is alive to lead",
				c.GetTableId(), c.GetBucket(), m.GetTarget())
		}
	}
	endMove(b, m.GetTarget(), leader)
	return a.moveEnded(b, nil, c.GetNowMs())
}

// endMove makes replicas b's replica set, led by leader, in place. Any
// replica leaving raises the leader epoch even when the leader stays: a
// removed replica's fetches of the old epoch are then fenced, and never
// taken for those of the same node added again later with an empty log.
func endMove(b *pb.BucketRecord, replicas []uint32, leader uint32) {
	removed := slices.ContainsFunc(b.GetReplicas(), func(r uint32) bool { return !slices.Contains(replicas, r) })
	if leader != b.GetLeader() || (removed && leader != 0) {
		b.LeaderEpoch++
	}
	b.Leader = leader
	b.Replicas = slices.Clone(replicas)
	b.Isr = inOrder(replicas, b.GetIsr())
	b.Move = nil
	b.BucketEpoch++
}

// moveEnded stores b, whose move ended, takes it off the running moves
// and starts the queued moves that now have room. dropped are queued
// moves taken off the queue.
func (a *applier) moveEnded(b *pb.BucketRecord, dropped []*pb.BucketMove, nowMs int64) (*pb.CommandResult, error) {
	if err := a.putBucket(b); err != nil {
		return nil, err
	}
	plan, err := a.movePlan()
	if err != nil {
		return nil, err
	}
	if err := a.pruneRunning(plan); err != nil {
		return nil, err
	}
	result := &pb.MoveResult{Buckets: []*pb.BucketRecord{b}, Queued: dropped}
	started, err := a.startQueued(plan, nowMs)
	if err != nil {
		return nil, err
	}
	result.Buckets = append(result.Buckets, started...)
	if err := a.putMovePlan(plan); err != nil {
		return nil, err
	}
	result.Plan = plan
	return &pb.CommandResult{Value: &pb.CommandResult_Moves{Moves: result}}, nil
}

// pruneRunning takes off the plan's running list the moves whose bucket no
// longer moves (ended, or its table dropped).
func (a *applier) pruneRunning(plan *pb.MovePlan) error {
	keep := plan.GetRunning()[:0]
	for _, m := range plan.GetRunning() {
		b := &pb.BucketRecord{}
		ok, err := getRecord(a.tx.Bucket(bucketBuckets), bucketKey(m.GetTableId(), m.GetBucket()), b)
		if err != nil {
			return err
		}
		if ok && b.GetMove() != nil {
			keep = append(keep, m)
		}
	}
	plan.Running = keep
	return nil
}

// startQueued starts queued moves while fewer than max_moves run; a queued
// move that no longer applies (its table dropped, a target node gone or
// draining, the bucket moving or already there) is dropped.
func (a *applier) startQueued(plan *pb.MovePlan, nowMs int64) ([]*pb.BucketRecord, error) {
	if len(plan.GetQueued()) == 0 || len(plan.GetRunning()) >= int(plan.GetMaxMoves()) {
		return nil, nil
	}
	nodes, err := listNodes(a.tx)
	if err != nil {
		return nil, err
	}
	var started []*pb.BucketRecord
	for len(plan.GetQueued()) > 0 && len(plan.GetRunning()) < int(plan.GetMaxMoves()) {
		m := plan.Queued[0]
		plan.Queued = plan.Queued[1:]
		b := &pb.BucketRecord{}
		ok, err := getRecord(a.tx.Bucket(bucketBuckets), bucketKey(m.GetTableId(), m.GetBucket()), b)
		if err != nil {
			return nil, err
		}
		if !ok || b.GetMove() != nil || checkTarget(b, m.GetTarget(), nodes) != nil {
			continue
		}
		startMove(b, m.GetTarget(), nowMs)
		plan.Running = append(plan.Running, m)
		if err := a.putBucket(b); err != nil {
			return nil, err
		}
		started = append(started, b)
	}
	return started, nil
}

// cancelMove goes back from one bucket's move, or from every move.
func (a *applier) cancelMove(c *pb.CancelMove) (*pb.CommandResult, error) {
	if len(c.GetLiveNodes()) > maxLiveNodes {
		return nil, errorf(codeInvalidRequest, "cancel move: %d live node ids exceed %d", len(c.GetLiveNodes()), maxLiveNodes)
	}
	plan, err := a.movePlan()
	if err != nil {
		return nil, err
	}
	if err := a.pruneRunning(plan); err != nil {
		return nil, err
	}
	draining, err := a.drainingNodes()
	if err != nil {
		return nil, err
	}
	live := func(id uint32) bool { return slices.Contains(c.GetLiveNodes(), id) }
	result := &pb.MoveResult{}
	if c.GetAll() {
		result.Queued, plan.Queued = plan.GetQueued(), nil
		for _, m := range plan.GetRunning() {
			b, err := a.bucketRecord(m.GetTableId(), m.GetBucket())
			if err != nil {
				return nil, err
			}
			if cancelBucket(b, live, draining) != nil {
				continue // it can only finish: it keeps running
			}
			if err := a.putBucket(b); err != nil {
				return nil, err
			}
			result.Buckets = append(result.Buckets, b)
		}
		if err := a.pruneRunning(plan); err != nil {
			return nil, err
		}
		if err := a.putMovePlan(plan); err != nil {
			return nil, err
		}
		result.Plan = plan
		return &pb.CommandResult{Value: &pb.CommandResult_Moves{Moves: result}}, nil
	}
	if i := slices.IndexFunc(plan.GetQueued(), func(m *pb.BucketMove) bool {
		return m.GetTableId() == c.GetTableId() && m.GetBucket() == c.GetBucket()
	}); i >= 0 {
		result.Queued = []*pb.BucketMove{plan.Queued[i]}
		plan.Queued = slices.Delete(plan.Queued, i, i+1)
		if err := a.putMovePlan(plan); err != nil {
			return nil, err
		}
		result.Plan = plan
		return &pb.CommandResult{Value: &pb.CommandResult_Moves{Moves: result}}, nil
	}
	b, err := a.bucketRecord(c.GetTableId(), c.GetBucket())
	if err != nil {
		return nil, err
	}
	if b.GetMove() == nil {
		return nil, errorf(codeInvalidRequest, "table %d bucket %d is not moving", c.GetTableId(), c.GetBucket())
	}
	if err := cancelBucket(b, live, draining); err != nil {
		return nil, err
	}
	return a.moveEnded(b, nil, c.GetNowMs())
}

// cancelBucket takes b back to its move's original replicas, in place.
func cancelBucket(b *pb.BucketRecord, live, draining func(id uint32) bool) *Error {
	orig := b.GetMove().GetOriginal()
	isr := inOrder(orig, b.GetIsr())
	if len(isr) == 0 {
		return errorf(codeNotEnoughReplicas, "table %d bucket %d: none of the original replicas %v is in sync (ISR %v); only completing the move keeps the data",
			b.GetTableId(), b.GetBucket(), orig, b.GetIsr())
	}
	leader := b.GetLeader()
	if leader != 0 && !slices.Contains(orig, leader) {
		if leader = preferred(orig, func(id uint32) bool { return slices.Contains(isr, id) && live(id) }, draining); leader == 0 {
			return errorf(codeNotEnoughReplicas, "table %d bucket %d: none of the original in-sync replicas %v is alive to lead",
				b.GetTableId(), b.GetBucket(), isr)
		}
	}
	endMove(b, orig, leader)
	return nil
}
