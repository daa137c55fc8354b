package server

import (
	"context"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// tabletService implements pb.DRPCTabletServer over the replica manager.
type tabletService struct {
	m *replica.Manager
	s *Server // what the replicas need of the node: KV snapshots commit through it
}

var _ pb.DRPCTabletServer = (*tabletService)(nil)

func (t *tabletService) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	return t.m.Produce(ctx, req)
}

func (t *tabletService) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	return t.m.Fetch(ctx, req)
}

func (t *tabletService) ListOffsets(ctx context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	return t.m.ListOffsets(ctx, req)
}

func (t *tabletService) PutKv(ctx context.Context, req *pb.PutKvRequest) (*pb.ProduceResponse, error) {
	return t.m.PutKv(ctx, req)
}

func (t *tabletService) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error) {
	return t.m.Lookup(ctx, req)
}

func (t *tabletService) PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	return t.m.PrefixLookup(ctx, req)
}

func (t *tabletService) ScanRows(ctx context.Context, req *pb.ScanRowsRequest) (*pb.ScanRowsResponse, error) {
	return t.m.ScanRows(ctx, req)
}

// SnapshotKV takes a KV snapshot of a primary-key bucket now, on its
// leader, and commits it.
func (t *tabletService) SnapshotKV(ctx context.Context, req *pb.SnapshotKVRequest) (*pb.SnapshotKVResponse, error) {
	return t.s.snapshotBucket(ctx, replica.BucketID{TableID: req.TableId, Bucket: req.Bucket})
}

// tabletGate answers UNAVAILABLE until the replica manager runs.
type tabletGate struct{ s *Server }

var _ pb.DRPCTabletServer = (*tabletGate)(nil)

func (g *tabletGate) service() (*tabletService, error) {
	if !g.s.tabletReady.Load() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is starting", g.s.cfg.NodeID)
	}
	return &tabletService{m: g.s.replicas, s: g.s}, nil
}

func (g *tabletGate) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.Produce(ctx, req)
}

func (g *tabletGate) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.Fetch(ctx, req)
}

func (g *tabletGate) ListOffsets(ctx context.Context, req *pb.ListOffsetsRequest) (*pb.ListOffsetsResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.ListOffsets(ctx, req)
}

func (g *tabletGate) PutKv(ctx context.Context, req *pb.PutKvRequest) (*pb.ProduceResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.PutKv(ctx, req)
}

func (g *tabletGate) Lookup(ctx context.Context, req *pb.LookupRequest) (*pb.LookupResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.Lookup(ctx, req)
}

func (g *tabletGate) PrefixLookup(ctx context.Context, req *pb.PrefixLookupRequest) (*pb.PrefixLookupResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.PrefixLookup(ctx, req)
}

func (g *tabletGate) SnapshotKV(ctx context.Context, req *pb.SnapshotKVRequest) (*pb.SnapshotKVResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.SnapshotKV(ctx, req)
}

func (g *tabletGate) ScanRows(ctx context.Context, req *pb.ScanRowsRequest) (*pb.ScanRowsResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.ScanRows(ctx, req)
}
