package meta

import (
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// MoveReplicas starts (or queues) moves of buckets' replicas, named by
// database, table and bucket, on the Raft leader (MoveReplicas in
// metastate.proto). The controller completes each once its target is in
// sync (controllerLoop).
func (m *metaService) MoveReplicas(ctx context.Context, req *pb.MoveReplicasRequest) (*pb.MoveReplicasResponse, error) {
	if len(req.Moves) == 0 && req.ThrottleBytesPerS == 0 && req.MaxMoves == 0 {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "move replicas: no move, throttle or bound of moves at once")
	}
	id := requestID(req.RequestId)
	var resp *pb.MoveReplicasResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		n := m.r.node.Load()
		c := &pb.MoveReplicas{ThrottleBytesPerS: req.ThrottleBytesPerS, MaxMoves: req.MaxMoves, NowMs: time.Now().UnixMilli()}
		if err := n.State().Read(func(v *metastate.View) error {
			for _, mv := range req.Moves {
				id, err := physicalID(v, mv.Database, mv.Table, mv.Partition)
				if err != nil {
					return err
				}
				c.Moves = append(c.Moves, &pb.BucketMove{TableId: id, Bucket: mv.Bucket, Target: mv.Replicas})
			}
			return nil
		}); err != nil {
			return err
		}
		res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_MoveReplicas{MoveReplicas: c}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		resp, err = m.r.moveResponse(n.State(), res)
		if err == nil {
			m.r.log.Info("moves started", "started", len(resp.Started), "queued", len(resp.Queued), "index", resp.Index,
				"throttle_bytes_per_s", resp.Bounds.GetThrottleBytesPerS(), "max_moves", resp.Bounds.GetMaxMoves())
		}
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.MoveReplicas(ctx, req)
		return err
	})
	return resp, err
}

// CancelMoves goes back from a bucket's move, or from every move, on the
// Raft leader (CancelMove in metastate.proto).
func (m *metaService) CancelMoves(ctx context.Context, req *pb.CancelMovesRequest) (*pb.MoveReplicasResponse, error) {
	if !req.All && req.Table == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "cancel moves: name a table's bucket, or all")
	}
	id := requestID(req.RequestId)
	var resp *pb.MoveReplicasResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		g, n := m.r.deps.Gossip(), m.r.node.Load()
		if g == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", m.r.cfg.NodeID)
		}
		c := &pb.CancelMove{All: req.All, LiveNodes: liveTablets(n.State().Nodes(), g), NowMs: time.Now().UnixMilli()}
		var before *pb.MovePlan
		if err := n.State().Read(func(v *metastate.View) error {
			if !req.All {
				id, err := physicalID(v, req.Database, req.Table, req.Partition)
				if err != nil {
					return err
				}
				c.TableId, c.Bucket = id, req.Bucket
			}
			var err error
			before, err = v.MovePlan()
			return err
		}); err != nil {
			return err
		}
		res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_CancelMove{CancelMove: c}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		if resp, err = m.r.moveResponse(n.State(), res); err != nil {
			return err
		}
		// The buckets changed went back; with all, those still running
		// could not. A single cancel's result lists its bucket first,
		// then the queued moves that took the freed turn and started.
		resp.Cancelled, resp.Started = resp.Started, nil
		if !req.All && len(resp.Cancelled) > 1 {
			resp.Cancelled, resp.Started = resp.Cancelled[:1], resp.Cancelled[1:]
		}
		resp.Dequeued, resp.Queued = resp.Queued, nil
		if req.All {
			resp.Kept, err = m.r.namedMoves(n.State(), res.GetMoves().GetPlan().GetRunning())
			if err != nil {
				return err
			}
		}
		m.r.log.Info("moves cancelled", "cancelled", len(resp.Cancelled), "dequeued", len(resp.Dequeued), "kept", len(resp.Kept),
			"running_before", len(before.GetRunning()), "index", resp.Index)
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.CancelMoves(ctx, req)
		return err
	})
	return resp, err
}

// MoveStatus reports the moves running and queued, as the leader's state
// holds them after a barrier.
func (m *metaService) MoveStatus(ctx context.Context, req *pb.MoveStatusRequest) (*pb.MoveStatusResponse, error) {
	var resp *pb.MoveStatusResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		n := m.r.node.Load()
		if err := n.Barrier(ctx); err != nil {
			return err
		}
		return n.State().Read(func(v *metastate.View) error {
			var err error
			resp, err = readMoveStatus(v)
			return err
		})
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.MoveStatus(ctx, req)
		return err
	})
	return resp, err
}

// moveResponse names the buckets of a MoveReplicas or CancelMove result.
func (r *Role) moveResponse(st *metastate.State, res *pb.CommandResult) (*pb.MoveReplicasResponse, error) {
	mr := res.GetMoves()
	resp := &pb.MoveReplicasResponse{Index: res.GetIndex(), Bounds: &pb.MoveBounds{
		ThrottleBytesPerS: mr.GetPlan().GetThrottleBytesPerS(), MaxMoves: mr.GetPlan().GetMaxMoves()}}
	err := st.Read(func(v *metastate.View) error {
		names, err := newBucketNames(v)
		if err != nil {
			return err
		}
		for _, b := range mr.GetBuckets() {
			target := b.GetReplicas()
			if b.GetMove() != nil {
				target = b.GetMove().GetTarget()
			}
			mv, err := nameMove(names, &pb.BucketMove{TableId: b.GetTableId(), Bucket: b.GetBucket(), Target: target})
			if err != nil {
				return err
			}
			resp.Started = append(resp.Started, mv)
		}
		for _, mv := range mr.GetQueued() {
			named, err := nameMove(names, mv)
			if err != nil {
				return err
			}
			resp.Queued = append(resp.Queued, named)
		}
		return nil
	})
	return resp, err
}

// namedMoves names moves by their tables as st holds them.
func (r *Role) namedMoves(st *metastate.State, moves []*pb.BucketMove) ([]*pb.NamedBucketMove, error) {
	var out []*pb.NamedBucketMove
	err := st.Read(func(v *metastate.View) error {
		names, err := newBucketNames(v)
		if err != nil {
			return err
		}
		for _, mv := range moves {
			named, err := nameMove(names, mv)
			if err != nil {
				return err
			}
			out = append(out, named)
		}
		return nil
	})
	return out, err
}

// nameMove names a move's table and partition; a table or partition
// dropped since keeps no name.
func nameMove(names *bucketNames, mv *pb.BucketMove) (*pb.NamedBucketMove, error) {
	n := &pb.NamedBucketMove{Bucket: mv.GetBucket(), Replicas: slices.Clone(mv.GetTarget())}
	t, partition, err := names.name(mv.GetTableId())
	if err != nil {
		return nil, err
	}
	if t != nil {
		n.Database, n.Table, n.Partition = t.GetDatabase(), t.GetName(), partition
	}
	return n, nil
}

// physicalID is the id the buckets of a table, or of its partition, are
// keyed by.
func physicalID(v *metastate.View, database, table, partition string) (uint64, error) {
	t, p, _, err := v.PhysicalTable(database, table, partition)
	if err != nil {
		return 0, err
	}
	if p != nil {
		return p.GetId(), nil
	}
	return t.GetId(), nil
}

// readMoveStatus is the moves running and queued as v holds them.
func readMoveStatus(v *metastate.View) (*pb.MoveStatusResponse, error) {
	plan, err := v.MovePlan()
	if err != nil {
		return nil, err
	}
	names, err := newBucketNames(v)
	if err != nil {
		return nil, err
	}
	index, err := v.AppliedIndex()
	if err != nil {
		return nil, err
	}
	resp := &pb.MoveStatusResponse{Bounds: &pb.MoveBounds{ThrottleBytesPerS: plan.GetThrottleBytesPerS(), MaxMoves: plan.GetMaxMoves()},
		Index: index}
	for _, mv := range plan.GetRunning() {
		b, err := v.Bucket(mv.GetTableId(), mv.GetBucket())
		if err != nil || b.GetMove() == nil {
			continue // ended, or its table dropped, since the plan was written
		}
		named, err := nameMove(names, mv)
		if err != nil {
			return nil, err
		}
		resp.Running = append(resp.Running, &pb.MoveProgress{Move: named, Original: b.GetMove().GetOriginal(),
			Leader: b.GetLeader(), Isr: b.GetIsr(), StartedAtMs: b.GetMove().GetStartedAtMs()})
	}
	for _, mv := range plan.GetQueued() {
		named, err := nameMove(names, mv)
		if err != nil {
			return nil, err
		}
		resp.Queued = append(resp.Queued, named)
	}
	return resp, nil
}
