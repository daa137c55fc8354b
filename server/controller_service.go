package server

import (
	"context"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// AdjustIsr applies a bucket leader's ISR change through Raft; the state
// machine refuses it (FENCED) unless the leader, its epoch and the bucket
// epoch are current. The leader's request id goes into the command: a retry
// after an unknown outcome then gets the first attempt's result, where a
// fresh id would be FENCED by the bucket epoch the first attempt raised.
func (m *metaService) AdjustIsr(ctx context.Context, req *pb.AdjustIsrRequest) (*pb.AdjustIsrResponse, error) {
	if req.Change == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "adjust ISR without a change")
	}
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AdjustIsr{AdjustIsr: req.Change}})
	if err != nil {
		return nil, err
	}
	return &pb.AdjustIsrResponse{Bucket: res.GetBucket()}, nil
}

// AllocateWriterId hands out an idempotent writer id from the metadata
// counter.
func (m *metaService) AllocateWriterId(ctx context.Context, req *pb.AllocateWriterIdRequest) (*pb.AllocateWriterIdResponse, error) {
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AllocateWriterId{AllocateWriterId: &pb.AllocateWriterId{}}})
	if err != nil {
		return nil, err
	}
	return &pb.AllocateWriterIdResponse{WriterId: res.GetWriterId()}, nil
}

// WatchMetadata streams the committed metadata to a tablet node.
func (m *metaService) WatchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	return m.s.watchMetadata(req, stream)
}

// ElectLeaders runs an operator's election of bucket leaders on the Raft
// leader, which adds the tablet nodes gossip reports alive with their
// registered incarnation: the state machine elects only among them. An
// unclean election may lose acknowledged writes, so each is logged at warn
// level.
func (m *metaService) ElectLeaders(ctx context.Context, req *pb.ElectLeadersRequest) (*pb.ElectLeadersResponse, error) {
	if req.Database == "" || req.Table == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "elect leaders needs a database and a table")
	}
	id := requestID(req.RequestId)
	var resp *pb.ElectLeadersResponse
	err := m.s.onLeader(ctx, func(ctx context.Context) error {
		g, n := m.s.gossip.Load(), m.s.node.Load()
		if g == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", m.s.cfg.NodeID)
		}
		res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_ElectLeaders{ElectLeaders: &pb.ElectLeaders{
			Database: req.Database, Table: req.Table, Bucket: req.Bucket, Unclean: req.Unclean,
			LiveNodes: liveTablets(n.State().Nodes(), g),
		}}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		resp = &pb.ElectLeadersResponse{Buckets: res.GetElection().GetBuckets(), Index: res.GetIndex()}
		m.s.logElections(req, resp)
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ElectLeaders(ctx, req)
		return err
	})
	return resp, err
}

// logElections logs the leaders an operator's election chose: unclean ones
// at warn level, since what only the old ISR held may be lost.
func (s *Server) logElections(req *pb.ElectLeadersRequest, resp *pb.ElectLeadersResponse) {
	for _, e := range resp.Buckets {
		if !e.Elected {
			continue
		}
		b := e.Bucket
		attrs := []any{"table", req.Database + "." + req.Table, "bucket", b.Bucket, "leader", b.Leader,
			"leader_epoch", b.LeaderEpoch, "index", resp.Index}
		if e.Unclean {
			s.log.Warn("unclean leader election: data only the old in-sync replicas held may be lost",
				append(attrs, "unclean_elections", b.UncleanElections)...)
		} else {
			s.log.Info("leader elected", attrs...)
		}
	}
}

// CommitRemoteLog commits a bucket leader's new remote manifest through
// Raft; the state machine refuses it (FENCED) unless the leader, its epoch
// and the remote log version it built on are current. The leader's request
// id goes into the command, so a retry after an unknown outcome gets the
// first attempt's result instead of a FENCED for the version it raised.
func (m *metaService) CommitRemoteLog(ctx context.Context, req *pb.CommitRemoteLogRequest) (*pb.CommitRemoteLogResponse, error) {
	if req.Commit == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "commit remote log without a commit")
	}
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_CommitRemoteLog{CommitRemoteLog: req.Commit}})
	if err != nil {
		return nil, err
	}
	return &pb.CommitRemoteLogResponse{Bucket: res.GetBucket()}, nil
}

// CommitKVSnapshot commits a primary-key bucket leader's KV snapshot
// through Raft; the state machine refuses it (FENCED) unless the leader
// and its epoch are current.
func (m *metaService) CommitKVSnapshot(ctx context.Context, req *pb.CommitKVSnapshotRequest) (*pb.CommitKVSnapshotResponse, error) {
	if req.Commit == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "commit KV snapshot without a commit")
	}
	res, err := m.s.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_CommitKvSnapshot{CommitKvSnapshot: req.Commit}})
	if err != nil {
		return nil, err
	}
	return &pb.CommitKVSnapshotResponse{Bucket: res.GetBucket()}, nil
}
