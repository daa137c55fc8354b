package meta

import (
	"context"
	"math"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// The partition handlers (docs/partitions.md). The commands name the
// partition as the caller did; the state machine reads it against the
// table's partition columns, so no handler reads the table first.

func (m *metaService) CreatePartition(ctx context.Context, req *pb.CreatePartitionRequest) (*pb.CommandResponse, error) {
	return m.createPartition(ctx, req, pb.PartitionOrigin_PARTITION_ORIGIN_EXPLICIT)
}

// CreatePartitionOnWrite is a writer's: it creates the partition if the
// table allows it (partition.dynamic-create) and answers the existing one
// if another writer created it first.
func (m *metaService) CreatePartitionOnWrite(ctx context.Context, req *pb.CreatePartitionRequest) (*pb.CommandResponse, error) {
	return m.createPartition(ctx, req, pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE)
}

func (m *metaService) createPartition(ctx context.Context, req *pb.CreatePartitionRequest, origin pb.PartitionOrigin) (*pb.CommandResponse, error) {
	if req.GetPartition() == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "no partition named: want one like dt=2026-12-03")
	}
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_CreatePartition{
		CreatePartition: &pb.CreatePartition{Database: req.Database, Table: req.Name, Partition: req.Partition,
			IfNotExists: req.IfNotExists || origin == pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE, Origin: origin,
			LiveNodes: m.r.liveTabletNodes()}}})
}

func (m *metaService) DropPartition(ctx context.Context, req *pb.DropPartitionRequest) (*pb.CommandResponse, error) {
	if req.GetPartition() == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "no partition named: want one like dt=2026-12-03")
	}
	return m.command(ctx, &pb.Command{RequestId: requestID(req.RequestId), Op: &pb.Command_DropPartition{
		DropPartition: &pb.DropPartition{Database: req.Database, Table: req.Name, Partition: req.Partition, IfExists: req.IfExists}}})
}

func (m *metaService) ListPartitions(ctx context.Context, req *pb.ListPartitionsRequest) (*pb.ListPartitionsResponse, error) {
	var resp *pb.ListPartitionsResponse
	err := m.r.read(ctx, false, func(applied uint64) error {
		return m.r.node.Load().State().Read(func(v *metastate.View) error {
			t, _, err := v.Table(req.Database, req.Name)
			if err != nil {
				return err
			}
			parts, err := v.Partitions(t.GetId())
			if err != nil {
				return err
			}
			resp = &pb.ListPartitionsResponse{Table: t, AppliedIndex: applied}
			for _, p := range parts {
				buckets, err := v.Buckets(p.GetId())
				if err != nil {
					return err
				}
				resp.Partitions = append(resp.Partitions, summarizePartition(p, buckets))
			}
			return nil
		})
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ListPartitions(ctx, req)
		return err
	})
	return resp, err
}

// summarizePartition counts the state of a partition's buckets.
func summarizePartition(p *pb.PartitionRecord, buckets []*pb.BucketRecord) *pb.PartitionSummary {
	s := &pb.PartitionSummary{Partition: p, Buckets: int32(len(buckets))}
	for _, b := range buckets {
		switch {
		case b.GetLeader() == 0:
			s.Offline++
		case len(b.GetIsr()) == len(b.GetReplicas()) && b.GetMove() == nil:
			s.InSync++
		}
		s.RemoteBytes += b.GetRemoteLog().GetBytes()
	}
	return s
}

// getTable answers GetTable: a table and its buckets; of a partitioned
// table, one partition and its buckets, or, asked without a partition,
// every partition.
func (m *metaService) getTable(v *metastate.View, req *pb.GetTableRequest, applied uint64) (*pb.GetTableResponse, error) {
	table, buckets, err := v.Table(req.Database, req.Name)
	if err != nil {
		return nil, err
	}
	resp := &pb.GetTableResponse{Table: table, AppliedIndex: applied,
		MaxBatchBytes: int32(min(m.r.deps.MaxBatchFor(table), math.MaxInt32))}
	switch {
	case req.GetPartition() != "":
		p, err := v.PartitionNamed(table, req.GetPartition())
		if err != nil {
			return nil, err
		}
		resp.Partition = p
		if resp.Buckets, err = v.Buckets(p.GetId()); err != nil {
			return nil, err
		}
	case len(table.GetPartitionKeys()) == 0:
		resp.Buckets = buckets
	default:
		if resp.Partitions, err = v.Partitions(table.GetId()); err != nil {
			return nil, err
		}
	}
	holders := map[uint32]bool{}
	for _, b := range resp.Buckets {
		for _, r := range b.Replicas {
			holders[r] = true
		}
	}
	nodes, err := v.Nodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if holders[n.Id] {
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp, nil
}
