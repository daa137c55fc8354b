package meta

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// controllerTick paces the controller's liveness checks.
const controllerTick = 100 * time.Millisecond

// controllerLoop runs on every meta node and acts only while it leads Raft:
// tablet nodes that gossip reports dead for longer than the grace period,
// or that left, are fenced (FenceNodes): their leaderships move to another
// in-sync replica with a new epoch and they leave the ISRs; offline buckets
// get a leader back when an in-sync replica is alive again. It keeps no
// state that matters for safety. A new controller counts a node's grace
// from when its own gossip saw the node stop being alive: when the
// metadata leader dies with a bucket leader (the same node), the grace
// runs during the Raft election instead of after it.
func (r *Role) controllerLoop(ctx context.Context) {
	t := time.NewTicker(controllerTick)
	defer t.Stop()
	deadSince := map[uint32]time.Time{}
	wasLeader := false
	var view metadataView
	var lastReplace, lastElect, lastPartition, lastLake time.Time
	// idleReplace is what the last round of re-placing saw when it found
	// nothing to move: the same state and live nodes plan the same, so the
	// controller of an idle cluster of thousands of buckets does not read
	// them all every round.
	var idleReplace replaceInput
	completeWarn := sampledWarning{what: "completing a move"}
	replaceWarn := sampledWarning{what: "re-placing replicas"}
	electWarn := sampledWarning{what: "electing preferred leaders"}
	partitionWarn := sampledWarning{what: "auto-partitioning"}
	lakeWarn := sampledWarning{what: "assigning lake tasks"}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, g := r.node.Load(), r.deps.Gossip()
		if n == nil || g == nil || !n.IsLeader() {
			wasLeader = false
			continue
		}
		if !wasLeader {
			clear(deadSince)
			wasLeader = true
		}
		if err := view.catchUp(n.State()); err != nil {
			continue
		}
		gone := goneNodes(view.nodeList(), g.Member, deadSince, time.Now(), r.cfg.LivenessGrace)
		if view.needsFencing(gone) {
			r.log.Info("controller: fencing tablet nodes", "gone", gone)
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := n.Propose(cctx, &pb.Command{RequestId: []byte(NewID()),
				Op: &pb.Command_FenceNodes{FenceNodes: &pb.FenceNodes{Gone: gone}}})
			cancel()
			if err != nil {
				r.log.Warn("controller: fencing failed", "err", err)
			}
		}
		live := liveTablets(view.nodeList(), g)
		now := time.Now()
		completeWarn.log(r, now, r.completeMoves(ctx, n, &view, live))
		if in := (replaceInput{index: n.State().AppliedIndex(), live: fmt.Sprint(live)}); now.Sub(lastReplace) >= replaceEvery && in != idleReplace {
			lastReplace = now
			moved, err := r.replaceReplicas(ctx, n, live)
			replaceWarn.log(r, now, err)
			idleReplace = replaceInput{}
			if moved == 0 && err == nil {
				idleReplace = in
			}
		}
		if now.Sub(lastElect) >= autoElectEvery {
			lastElect = now
			_, err := r.autoElect(ctx, n, &view, live)
			electWarn.log(r, now, err)
		}
		if now.Sub(lastPartition) >= autoPartitionEvery {
			lastPartition = now
			partitionWarn.log(r, now, r.autoPartition(ctx, n, live, now))
		}
		if now.Sub(lastLake) >= lakeAssignEvery {
			lastLake = now
			lakeWarn.log(r, now, r.assignLakeTasks(ctx, n, live))
		}
	}
}

// replaceInput is what re-placing replicas plans from: the metadata as of
// an applied index, and the live tablet nodes.
type replaceInput struct {
	index uint64
	live  string
}

// completeMoves ends the moves whose target replicas are all in sync
// (CompleteMove), each a compare-and-set on the bucket epoch it saw: a
// bucket that changed since is looked at again next tick.
func (r *Role) completeMoves(ctx context.Context, n *raftmeta.Node, view *metadataView, live []uint32) error {
	for _, b := range view.completableMoves(func(id uint32) bool { return slices.Contains(live, id) }) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := n.Propose(cctx, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_CompleteMove{CompleteMove: &pb.CompleteMove{
			TableId: b.GetTableId(), Bucket: b.GetBucket(), BucketEpoch: b.GetBucketEpoch(), LiveNodes: live,
			NowMs: time.Now().UnixMilli()}}})
		cancel()
		if err != nil {
			return fmt.Errorf("table %d bucket %d: %w", b.GetTableId(), b.GetBucket(), err)
		}
		r.log.Info("controller: move completed", "table", b.GetTableId(), "bucket", b.GetBucket(), "replicas", b.GetMove().GetTarget())
	}
	return nil
}

// goneNodes lists registered tablet nodes that left, or that gossip (member)
// has not seen alive, as registered, for grace at now. A node's grace runs
// from when gossip saw it change (Member.Since) if gossip knows it, else
// from when deadSince first recorded it not alive.
func goneNodes(nodes []*pb.NodeRecord, member func(uint32) (gossip.Member, bool), deadSince map[uint32]time.Time,
	now time.Time, grace time.Duration) []uint32 {
	var gone []uint32
	for _, rec := range nodes {
		if !slices.Contains(rec.Roles, metastate.RoleTablet) {
			continue
		}
		m, ok := member(rec.Id)
		switch {
		case aliveAsRegistered(rec, m, ok):
			delete(deadSince, rec.Id)
		case ok && m.State == gossip.StateLeft && m.Incarnation == rec.Incarnation:
			gone = append(gone, rec.Id)
		default:
			since, seen := deadSince[rec.Id]
			if !seen {
				since = now
				if ok && !m.Since.IsZero() && m.Since.Before(now) {
					since = m.Since
				}
				deadSince[rec.Id] = since
			}
			if now.Sub(since) >= grace {
				gone = append(gone, rec.Id)
			}
		}
	}
	slices.Sort(gone)
	return gone
}

// aliveAsRegistered reports whether gossip's member m (ok: gossip knows the
// node) is the registered node rec alive: the same incarnation, so the same
// data folder.
func aliveAsRegistered(rec *pb.NodeRecord, m gossip.Member, ok bool) bool {
	return ok && m.State == gossip.StateAlive && m.Incarnation == rec.Incarnation
}

// liveTablets lists the registered tablet nodes gossip reports alive with
// their registered incarnation: the nodes an election may choose.
func liveTablets(nodes []*pb.NodeRecord, g *gossip.Gossip) []uint32 {
	var live []uint32
	for _, rec := range nodes {
		if m, ok := g.Member(rec.Id); slices.Contains(rec.Roles, metastate.RoleTablet) && aliveAsRegistered(rec, m, ok) {
			live = append(live, rec.Id)
		}
	}
	return live
}
