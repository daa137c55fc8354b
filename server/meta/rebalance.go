package meta

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Rebalance plans moves that even out replicas and preferred leaders over
// the live tablet nodes (metastate.PlanMoves), and with execute starts
// them as MoveReplicas does, on the Raft leader.
func (m *metaService) Rebalance(ctx context.Context, req *pb.RebalanceRequest) (*pb.RebalanceResponse, error) {
	id := requestID(req.RequestId)
	var resp *pb.RebalanceResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		g, n := m.r.deps.Gossip(), m.r.node.Load()
		if g == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", m.r.cfg.NodeID)
		}
		if err := n.Barrier(ctx); err != nil {
			return err
		}
		live := liveTablets(n.State().Nodes(), g)
		var moves []metastate.PlannedMove
		resp = &pb.RebalanceResponse{}
		if err := n.State().Read(func(v *metastate.View) error {
			plan, buckets, err := v.PlanInput(live, true)
			if err != nil {
				return err
			}
			if len(plan.Nodes) == 0 {
				return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS,
					"rebalance: no live tablet node that is not draining to move replicas to")
			}
			moves = metastate.PlanMoves(plan, buckets)
			after := slices.Clone(buckets)
			for _, b := range buckets {
				if b.Busy {
					resp.Busy++
				}
			}
			for _, mv := range moves {
				i := slices.IndexFunc(after, func(b metastate.PlanBucket) bool { return b.TableID == mv.TableID && b.Bucket == mv.Bucket })
				after[i].Replicas = mv.To
			}
			resp.Before, resp.After = nodeBalance(plan.Nodes, buckets), nodeBalance(plan.Nodes, after)
			names, err := newBucketNames(v)
			if err != nil {
				return err
			}
			for _, mv := range moves {
				named, err := nameMove(names, &pb.BucketMove{TableId: mv.TableID, Bucket: mv.Bucket, Target: mv.To})
				if err != nil {
					return err
				}
				resp.Moves = append(resp.Moves, &pb.PlannedMove{From: mv.From, Move: named})
			}
			return nil
		}); err != nil {
			return err
		}
		if !req.Execute || (len(moves) == 0 && req.ThrottleBytesPerS == 0 && req.MaxMoves == 0) {
			return nil
		}
		c := &pb.MoveReplicas{ThrottleBytesPerS: req.ThrottleBytesPerS, MaxMoves: req.MaxMoves, NowMs: time.Now().UnixMilli()}
		for _, mv := range moves {
			c.Moves = append(c.Moves, &pb.BucketMove{TableId: mv.TableID, Bucket: mv.Bucket, Target: mv.To})
		}
		if len(c.Moves) > metastate.MaxMovesPerCommand {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
				"rebalance: the plan has %d moves, more than %d at once; move some tables with table reassign first",
				len(c.Moves), metastate.MaxMovesPerCommand)
		}
		res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_MoveReplicas{MoveReplicas: c}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		if resp.Started, err = m.r.moveResponse(n.State(), res); err != nil {
			return err
		}
		m.r.log.Info("rebalance started", "moves", len(moves), "started", len(resp.Started.Started), "queued", len(resp.Started.Queued),
			"index", resp.Started.Index, "throttle_bytes_per_s", resp.Started.Bounds.GetThrottleBytesPerS())
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.Rebalance(ctx, req)
		return err
	})
	return resp, err
}

// nodeBalance counts each node's replicas and preferred leaders in buckets.
func nodeBalance(nodes []metastate.PlacementNode, buckets []metastate.PlanBucket) []*pb.NodeBalance {
	out := make([]*pb.NodeBalance, len(nodes))
	at := map[uint32]*pb.NodeBalance{}
	for i, n := range nodes {
		out[i] = &pb.NodeBalance{NodeId: n.ID}
		at[n.ID] = out[i]
	}
	for _, b := range buckets {
		for i, r := range b.Replicas {
			if nb := at[r]; nb != nil {
				nb.Replicas++
				if i == 0 {
					nb.Leaders++
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *pb.NodeBalance) int { return cmp.Compare(a.NodeId, b.NodeId) })
	return out
}

// SetClusterSettings changes cluster settings on the Raft leader.
func (m *metaService) SetClusterSettings(ctx context.Context, req *pb.SetClusterSettingsRequest) (*pb.SetClusterSettingsResponse, error) {
	if req.AutoElectLeaders == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "set cluster settings: no setting named")
	}
	id := requestID(req.RequestId)
	var resp *pb.SetClusterSettingsResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		res, err := m.r.node.Load().Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_SetClusterSettings{
			SetClusterSettings: &pb.SetClusterSettings{AutoElectLeaders: req.AutoElectLeaders}}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		resp = &pb.SetClusterSettingsResponse{Settings: res.GetSettings(), Index: res.GetIndex(), Unchanged: res.GetUnchanged()}
		m.r.log.Info("cluster settings changed", "auto_elect_leaders", resp.Settings.GetAutoElectLeaders(), "unchanged", resp.Unchanged)
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.SetClusterSettings(ctx, req)
		return err
	})
	return resp, err
}

// Controller work that runs every few ticks rather than every tick: both
// read the whole state, and neither is urgent to the tenth of a second.
const (
	// replaceEvery paces the re-placement of replicas (replaceReplicas).
	replaceEvery = 2 * time.Second
	// autoElectEvery paces automatic preferred elections (autoElect).
	autoElectEvery = 5 * time.Second
	// maxAutoElections bounds the buckets one automatic round elects.
	maxAutoElections = 256
)

// replaceReplicas starts the moves that give buckets their replicas back:
// every replica on a node being decommissioned moves to another node, and
// a bucket with fewer replicas than its table's replication (a removed
// node's) gets new ones, placed as metastate.PlanMoves repairs, copied
// from the surviving in-sync replicas. Buckets that move already, wait for
// a turn or have no leader are left for a later round. It returns the
// error that kept it from starting them, if any (the caller samples the
// warnings).
func (r *Role) replaceReplicas(ctx context.Context, n *raftmeta.Node, live []uint32) (int, error) {
	var moves []metastate.PlannedMove
	if err := n.State().Read(func(v *metastate.View) error {
		plan, buckets, err := v.PlanInput(live, false)
		if err != nil {
			return err
		}
		moves = metastate.PlanMoves(plan, buckets)
		return nil
	}); err != nil || len(moves) == 0 {
		return 0, err
	}
	if len(moves) > metastate.MaxMovesPerCommand {
		moves = moves[:metastate.MaxMovesPerCommand]
	}
	c := &pb.MoveReplicas{NowMs: time.Now().UnixMilli()}
	for _, mv := range moves {
		c.Moves = append(c.Moves, &pb.BucketMove{TableId: mv.TableID, Bucket: mv.Bucket, Target: mv.To})
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := n.Propose(cctx, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_MoveReplicas{MoveReplicas: c}})
	if err == nil {
		err = metastate.ResultError(res)
	}
	if err != nil {
		return 0, err
	}
	r.log.Info("controller: re-placing replicas", "moves", len(moves), "started", len(res.GetMoves().GetBuckets()),
		"queued", len(res.GetMoves().GetQueued()), "first", fmt.Sprintf("table %d bucket %d %v -> %v",
			moves[0].TableID, moves[0].Bucket, moves[0].From, moves[0].To))
	return len(moves), nil
}

// autoElect, with the cluster setting auto_elect_leaders on, elects the
// preferred leader (metastate.PreferredLeader) of every bucket another
// replica leads, as a clean `table elect` would, a table at a time: a node
// that came back and caught up gets its leaderships back, and a
// rebalance's replica order becomes its leaders. Moving buckets are left
// alone. It returns how many buckets it elected.
func (r *Role) autoElect(ctx context.Context, n *raftmeta.Node, view *metadataView, live []uint32) (int, error) {
	type target struct {
		bucket    *pb.BucketRecord
		table     *pb.TableRecord
		partition string
	}
	var targets []target
	if err := n.State().Read(func(v *metastate.View) error {
		s, err := v.ClusterSettings()
		if err != nil || !s.GetAutoElectLeaders() {
			return err
		}
		isLive := func(id uint32) bool { return slices.Contains(live, id) }
		draining := func(id uint32) bool { return view.nodes[id].GetDraining() }
		misled := view.misled(isLive, draining, maxAutoElections)
		if len(misled) == 0 {
			return nil
		}
		names, err := newBucketNames(v)
		if err != nil {
			return err
		}
		for _, b := range misled {
			t, partition, err := names.name(b.GetTableId())
			if err != nil {
				return err
			}
			if t != nil {
				targets = append(targets, target{b, t, partition})
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	elected := 0
	for _, tg := range targets {
		t, bucket := tg.table, tg.bucket.GetBucket()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := n.Propose(cctx, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_ElectLeaders{ElectLeaders: &pb.ElectLeaders{
			Database: t.GetDatabase(), Table: t.GetName(), Partition: tg.partition, Bucket: &bucket, LiveNodes: live}}})
		cancel()
		if err == nil {
			err = metastate.ResultError(res)
		}
		if err != nil {
			return elected, fmt.Errorf("electing %s bucket %d: %w", qualifiedName(t, tg.partition), bucket, err)
		}
		elected++
	}
	if elected > 0 {
		r.log.Info("controller: preferred leaders elected", "buckets", elected)
	}
	return elected, nil
}

// misled lists up to limit buckets, not moving, whose preferred leader is
// a live replica other than their leader, in table and bucket order.
func (v *metadataView) misled(live, draining func(uint32) bool, limit int) []*pb.BucketRecord {
	var out []*pb.BucketRecord
	for _, table := range v.buckets {
		for _, b := range table {
			if b.GetMove() != nil {
				continue
			}
			if p := metastate.PreferredLeader(b, live, draining); p != 0 && p != b.GetLeader() {
				out = append(out, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b *pb.BucketRecord) int {
		return cmp.Or(cmp.Compare(a.GetTableId(), b.GetTableId()), cmp.Compare(a.GetBucket(), b.GetBucket()))
	})
	return out[:min(len(out), limit)]
}

// sampledWarning logs a recurring failure of one controller task at warn
// level when it first happens, when its message changes, and at most every
// warnEvery while it lasts, so a task retried each tick does not flood the
// log.
type sampledWarning struct {
	what   string
	last   time.Time
	msg    string
	missed int
}

// warnEvery bounds how often one recurring warning is logged.
const warnEvery = 30 * time.Second

func (w *sampledWarning) log(r *Role, now time.Time, err error, attrs ...any) {
	if err == nil {
		w.msg, w.missed = "", 0
		return
	}
	if msg := err.Error(); msg != w.msg || now.Sub(w.last) >= warnEvery {
		r.log.Warn("controller: "+w.what+" failed", append(attrs, "err", err, "times_since_last_logged", w.missed)...)
		w.last, w.msg, w.missed = now, msg, 0
		return
	}
	w.missed++
}
