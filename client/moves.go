package client

import (
	"context"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// BucketMove is a bucket, by table and number, and the replicas a move
// gives it, preferred leader first.
type BucketMove struct {
	Database string   `json:"database"`
	Table    string   `json:"table"`
	Bucket   int32    `json:"bucket"`
	Replicas []uint32 `json:"replicas"`
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
		req.Moves = append(req.Moves, &pb.NamedBucketMove{Database: m.Database, Table: m.Table, Bucket: m.Bucket, Replicas: m.Replicas})
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
	out := &MoveStatus{Running: []MoveProgress{}, Queued: movesFromPB(resp.Queued),
		ThrottleBytesPerS: resp.GetBounds().GetThrottleBytesPerS(), MaxMoves: resp.GetBounds().GetMaxMoves()}
	for _, p := range resp.Running {
		mp := MoveProgress{BucketMove: moveFromPB(p.Move), Original: p.Original, Leader: p.Leader, ISR: p.Isr,
			InSync: []uint32{}, StartedAt: time.UnixMilli(p.StartedAtMs)}
		for _, id := range mp.Replicas {
			for _, in := range p.Isr {
				if in == id {
					mp.InSync = append(mp.InSync, id)
				}
			}
		}
		out.Running = append(out.Running, mp)
	}
	return out, nil
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
	return BucketMove{Database: m.GetDatabase(), Table: m.GetTable(), Bucket: m.GetBucket(), Replicas: m.GetReplicas()}
}
