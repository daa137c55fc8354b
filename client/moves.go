package client

import (
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// BucketMove is a bucket, by table and number, and the replicas a move
// gives it, preferred leader first.
type BucketMove struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	// Partition is the bucket's partition in a partitioned table
	// ("dt=2026-12-03"), whose buckets are its partitions'.
	Partition string   `json:"partition,omitempty"`
	Bucket    int32    `json:"bucket"`
	Replicas  []uint32 `json:"replicas"`
}

// MoveOptions bound the moves of a cluster; zero fields keep its bounds.
type MoveOptions struct {
	// ThrottleBytesPerS bounds the bytes per second each node lets the
	// replicas a move adds copy while they catch up; -1 removes the
	// bound.
	ThrottleBytesPerS int64
	// MaxMoves bounds the moves running at once; more wait their turn.
	MaxMoves int32
}

// MoveResult is what MoveReplicas or CancelMoves did.
type MoveResult struct {
	// Started: moves that began (MoveReplicas).
	Started []BucketMove `json:"started"`
	// Queued: moves waiting for a turn (MoveReplicas).
	Queued []BucketMove `json:"queued"`
	// Cancelled: moves that went back to their original replicas, and
	// Dequeued: queued moves dropped (CancelMoves).
	Cancelled []BucketMove `json:"cancelled"`
	Dequeued  []BucketMove `json:"dequeued"`
	// Kept: moves that cannot go back (none of their original replicas is
	// in sync) and keep running (CancelMoves of all).
	Kept []BucketMove `json:"kept"`
	// ThrottleBytesPerS and MaxMoves are the cluster's bounds after the
	// call (0: no throttle).
	ThrottleBytesPerS int64 `json:"throttle_bytes_per_s"`
	MaxMoves          int32 `json:"max_moves"`
}

// MoveProgress is a running move.
type MoveProgress struct {
	BucketMove
	// Original: the replicas the move started from.
	Original []uint32 `json:"original"`
	Leader   uint32   `json:"leader"`
	ISR      []uint32 `json:"isr"`
	// InSync: the target replicas in the ISR; the move completes when
	// all are.
	InSync    []uint32  `json:"in_sync"`
	StartedAt time.Time `json:"started_at"`
}

// MoveStatus is the cluster's moves.
type MoveStatus struct {
	Running           []MoveProgress `json:"running"`
	Queued            []BucketMove   `json:"queued"`
	ThrottleBytesPerS int64          `json:"throttle_bytes_per_s"`
	MaxMoves          int32          `json:"max_moves"`
}

// MoveReplicas moves buckets' replicas to other nodes. Each move starts at
// once, or waits its turn when MaxMoves run already: the replicas it adds
// join as learners, copy the bucket's local tail (what remote storage
// holds stays there) at most at the throttle, enter the ISR once caught
// up, and then the bucket's replicas become the target (its leader moving
// if it must); the replicas it removes delete their data only then.
// Refused whole, nothing started, when one move is invalid (an unknown
// table, bucket or node, a draining node, a bucket moving already).
func (a *Admin) MoveReplicas(ctx context.Context, moves []BucketMove, opts MoveOptions) (*MoveResult, error) {
	req := &pb.MoveReplicasRequest{RequestId: newRequestID(), ThrottleBytesPerS: opts.ThrottleBytesPerS, MaxMoves: opts.MaxMoves}
	for _, m := range moves {
		req.Moves = append(req.Moves, &pb.NamedBucketMove{Database: m.Database, Table: m.Table, Partition: m.Partition, Bucket: m.Bucket,
			Replicas: m.Replicas})
	}
	var resp *pb.MoveReplicasResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.MoveReplicas(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return moveResultFromPB(resp), nil
}

// CancelMove goes back from a bucket's move (running: to its original
// replicas, which must still hold an in-sync copy; queued: dropped).
func (a *Admin) CancelMove(ctx context.Context, database, table string, bucket int32) (*MoveResult, error) {
	return a.cancelMoves(ctx, &pb.CancelMovesRequest{Database: database, Table: table, Bucket: bucket})
}

// CancelAllMoves drops every queued move and takes every running one back
// where it can (MoveResult.Kept lists those that cannot).
func (a *Admin) CancelAllMoves(ctx context.Context) (*MoveResult, error) {
	return a.cancelMoves(ctx, &pb.CancelMovesRequest{All: true})
}

func (a *Admin) cancelMoves(ctx context.Context, req *pb.CancelMovesRequest) (*MoveResult, error) {
	req.RequestId = newRequestID()
	var resp *pb.MoveReplicasResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.CancelMoves(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return moveResultFromPB(resp), nil
}

// MoveStatus returns the moves running and waiting.
func (a *Admin) MoveStatus(ctx context.Context) (*MoveStatus, error) {
	var resp *pb.MoveStatusResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.MoveStatus(ctx, &pb.MoveStatusRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	return moveStatusFromPB(resp), nil
}

// moveStatusFromPB is a MoveStatus response as the SDK's MoveStatus.
func moveStatusFromPB(resp *pb.MoveStatusResponse) *MoveStatus {
	out := &MoveStatus{Running: progressFromPB(resp.Running), Queued: movesFromPB(resp.Queued),
		ThrottleBytesPerS: resp.GetBounds().GetThrottleBytesPerS(), MaxMoves: resp.GetBounds().GetMaxMoves()}
	return out
}

// progressFromPB is running moves, each with its target replicas in sync.
func progressFromPB(running []*pb.MoveProgress) []MoveProgress {
	out := []MoveProgress{}
	for _, p := range running {
		mp := MoveProgress{BucketMove: moveFromPB(p.Move), Original: p.Original, Leader: p.Leader, ISR: p.Isr,
			InSync: []uint32{}, StartedAt: time.UnixMilli(p.StartedAtMs)}
		for _, id := range mp.Replicas {
			if slices.Contains(p.Isr, id) {
				mp.InSync = append(mp.InSync, id)
			}
		}
		out = append(out, mp)
	}
	return out
}

func moveResultFromPB(resp *pb.MoveReplicasResponse) *MoveResult {
	return &MoveResult{Started: movesFromPB(resp.Started), Queued: movesFromPB(resp.Queued), Cancelled: movesFromPB(resp.Cancelled),
		Dequeued: movesFromPB(resp.Dequeued), Kept: movesFromPB(resp.Kept),
		ThrottleBytesPerS: resp.GetBounds().GetThrottleBytesPerS(), MaxMoves: resp.GetBounds().GetMaxMoves()}
}

func movesFromPB(ms []*pb.NamedBucketMove) []BucketMove {
	out := make([]BucketMove, 0, len(ms))
	for _, m := range ms {
		out = append(out, moveFromPB(m))
	}
	return out
}

func moveFromPB(m *pb.NamedBucketMove) BucketMove {
	return BucketMove{Database: m.GetDatabase(), Table: m.GetTable(), Partition: m.GetPartition(), Bucket: m.GetBucket(), Replicas: m.GetReplicas()}
}

// RebalanceOptions say whether a rebalance starts its plan, and the
// bounds its moves run under (as MoveOptions).
type RebalanceOptions struct {
	Execute bool
	MoveOptions
}

// PlannedMove is a move of a rebalance plan: the bucket, its target
// replicas (preferred leader first) and the replicas it has now.
type PlannedMove struct {
	BucketMove
	From []uint32 `json:"from"`
}

// NodeBalance is what a node holds: replicas, and buckets it is the
// preferred leader of.
type NodeBalance struct {
	Node     uint32 `json:"node"`
	Replicas int32  `json:"replicas"`
	Leaders  int32  `json:"leaders"`
}

// RebalancePlan is a rebalance's plan, and with Execute what started.
type RebalancePlan struct {
	Moves []PlannedMove `json:"moves"`
	// Before and After: each live tablet node's load now and once the
	// plan has run.
	Before []NodeBalance `json:"before"`
	After  []NodeBalance `json:"after"`
	// Busy: buckets the plan left alone because they move already, wait
	// for a turn or have no leader.
	Busy int32 `json:"busy"`
	// Started: with Execute, the moves started and queued.
	Started *MoveResult `json:"started,omitempty"`
}

// Rebalance plans moves that even out replicas, then preferred leaders,
// over the live tablet nodes that are not draining (rack-aware: a move
// never narrows the racks a bucket spans), and fills buckets short of
// their table's replication. With Execute it starts them as MoveReplicas
// does. A bucket's preferred leader becomes its leader at the next clean
// election: `ElectLeaders`, or the cluster setting AutoElectLeaders.
func (a *Admin) Rebalance(ctx context.Context, opts RebalanceOptions) (*RebalancePlan, error) {
	req := &pb.RebalanceRequest{RequestId: newRequestID(), Execute: opts.Execute, ThrottleBytesPerS: opts.ThrottleBytesPerS,
		MaxMoves: opts.MaxMoves}
	var resp *pb.RebalanceResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.Rebalance(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &RebalancePlan{Moves: []PlannedMove{}, Before: balanceFromPB(resp.Before), After: balanceFromPB(resp.After), Busy: resp.Busy}
	for _, m := range resp.Moves {
		out.Moves = append(out.Moves, PlannedMove{BucketMove: moveFromPB(m.Move), From: m.From})
	}
	if resp.Started != nil {
		out.Started = moveResultFromPB(resp.Started)
	}
	return out, nil
}

func balanceFromPB(bs []*pb.NodeBalance) []NodeBalance {
	out := make([]NodeBalance, 0, len(bs))
	for _, b := range bs {
		out = append(out, NodeBalance{Node: b.NodeId, Replicas: b.Replicas, Leaders: b.Leaders})
	}
	return out
}

// ClusterSettings are the cluster-wide settings an operator changes at
// run time.
type ClusterSettings struct {
	// AutoElectLeaders: the controller gives each bucket back to its
	// preferred leader (first live in-sync replica) when another replica
	// leads it, as `ElectLeaders` would.
	AutoElectLeaders bool `json:"auto_elect_leaders"`
}

// SetAutoElectLeaders turns automatic preferred leader elections on or
// off, and returns the settings after the change.
func (a *Admin) SetAutoElectLeaders(ctx context.Context, on bool) (*ClusterSettings, error) {
	req := &pb.SetClusterSettingsRequest{RequestId: newRequestID(), AutoElectLeaders: &on}
	var resp *pb.SetClusterSettingsResponse
	err := a.c.call(ctx, func(ctx context.Context, m pb.DRPCMetaClient) error {
		var err error
		resp, err = m.SetClusterSettings(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return settingsFromPB(resp.Settings), nil
}

func settingsFromPB(s *pb.ClusterSettings) *ClusterSettings {
	return &ClusterSettings{AutoElectLeaders: s.GetAutoElectLeaders()}
}
