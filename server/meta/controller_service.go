package meta

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/access"
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
	res, err := m.r.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AdjustIsr{AdjustIsr: req.Change}})
	if err != nil {
		return nil, err
	}
	return &pb.AdjustIsrResponse{Bucket: res.GetBucket()}, nil
}

// AllocateWriterId hands out an idempotent writer id from the metadata
// counter, bound to the caller by a token when callers are authenticated
// (see writer_token.go).
func (m *metaService) AllocateWriterId(ctx context.Context, req *pb.AllocateWriterIdRequest) (*pb.AllocateWriterIdResponse, error) {
	caller := transport.CallerFrom(ctx).Principal
	var key []byte
	if !caller.IsAnonymous() && m.r.deps.WriterKey != nil {
		var err error
		if key, err = m.r.writerKey(ctx); err != nil {
			return nil, err
		}
	}
	res, err := m.r.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_AllocateWriterId{AllocateWriterId: &pb.AllocateWriterId{}}})
	if err != nil {
		return nil, err
	}
	resp := &pb.AllocateWriterIdResponse{WriterId: res.GetWriterId()}
	if key != nil {
		resp.WriterToken = access.WriterToken(key, resp.WriterId, caller)
	}
	return resp, nil
}

// WatchMetadata streams the committed metadata to a tablet node.
func (m *metaService) WatchMetadata(req *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	return m.r.watchMetadata(req, stream)
}

// ElectLeaders runs an operator's election of bucket leaders on the Raft
// leader, which adds the tablet nodes gossip reports alive with their
// registered incarnation: the state machine elects only among them. An
// unclean election also carries what those replicas' logs hold
// (replicaLogs), so the one that holds the most leads. An unclean election
// may lose acknowledged writes, so each is logged at warn level, with the
// ranking that chose its leader.
func (m *metaService) ElectLeaders(ctx context.Context, req *pb.ElectLeadersRequest) (*pb.ElectLeadersResponse, error) {
	if req.Database == "" || req.Table == "" {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "elect leaders needs a database and a table")
	}
	id := requestID(req.RequestId)
	var resp *pb.ElectLeadersResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		g, n := m.r.deps.Gossip(), m.r.node.Load()
		if g == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", m.r.cfg.NodeID)
		}
		var err error
		resp, err = m.r.electLeaders(ctx, req, id, liveTablets(n.State().Nodes(), g))
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.ElectLeaders(ctx, req)
		return err
	})
	return resp, err
}

// electLeaders proposes an operator's election with the tablet nodes live
// lists, on the Raft leader; an unclean one carries what the live replicas'
// logs hold (replicaLogs).
func (r *Role) electLeaders(ctx context.Context, req *pb.ElectLeadersRequest, id []byte, live []uint32) (*pb.ElectLeadersResponse, error) {
	n := r.node.Load()
	var logs []*pb.ReplicaLog
	if req.Unclean {
		var err error
		if logs, err = r.replicaLogs(ctx, n.State(), req.Database, req.Table, req.Partition, req.Bucket, live); err != nil {
			return nil, err
		}
	}
	res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_ElectLeaders{ElectLeaders: &pb.ElectLeaders{
		Database: req.Database, Table: req.Table, Partition: req.Partition, Bucket: req.Bucket, Unclean: req.Unclean,
		LiveNodes: live, ReplicaLogs: logs,
	}}})
	if err != nil {
		return nil, err
	}
	if err := metastate.ResultError(res); err != nil {
		return nil, err
	}
	resp := &pb.ElectLeadersResponse{Buckets: res.GetElection().GetBuckets(), Index: res.GetIndex()}
	r.logElections(req, resp)
	return resp, nil
}

// logElections logs the leaders an operator's election chose: unclean ones
// at warn level, since what only the old ISR held may be lost.
func (r *Role) logElections(req *pb.ElectLeadersRequest, resp *pb.ElectLeadersResponse) {
	for _, e := range resp.Buckets {
		if !e.Elected {
			continue
		}
		b := e.Bucket
		attrs := []any{"table", req.Database + "." + req.Table, "bucket", b.Bucket, "leader", b.Leader,
			"leader_epoch", b.LeaderEpoch, "index", resp.Index}
		if req.Partition != "" {
			attrs = append(attrs, "partition", req.Partition)
		}
		if e.Unclean {
			r.log.Warn("unclean leader election: data only the old in-sync replicas held may be lost",
				append(attrs, "unclean_elections", b.UncleanElections, "ranking", rankingForLog(e.Candidates))...)
		} else {
			r.log.Info("leader elected", attrs...)
		}
	}
}

// rankingForLog is an unclean election's ranking, best first, as one log
// value: "2 epoch 7 end 1200, 1 epoch 7 end 900, 3 unknown".
func rankingForLog(cs []*pb.ElectionCandidate) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		p := fmt.Sprintf("%d unknown", c.NodeId)
		if c.LogKnown {
			p = fmt.Sprintf("%d epoch %d end %d", c.NodeId, c.LatestEpoch, c.EndOffset)
		}
		if c.Draining {
			p += " draining"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// DrainNode runs an operator's drain of a tablet node on the Raft leader,
// which adds the tablet nodes gossip reports alive with their registered
// incarnation: the state machine moves leaderships only to them, and only
// within the ISR. The answer names each bucket's table, and the leader logs
// every leadership that moved.
func (m *metaService) DrainNode(ctx context.Context, req *pb.DrainNodeRequest) (*pb.DrainNodeResponse, error) {
	if req.NodeId == 0 {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "drain node needs a node id")
	}
	id := requestID(req.RequestId)
	var resp *pb.DrainNodeResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		g, n := m.r.deps.Gossip(), m.r.node.Load()
		if g == nil {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d does not know which nodes are alive yet", m.r.cfg.NodeID)
		}
		res, err := n.Propose(ctx, &pb.Command{RequestId: id, Op: &pb.Command_DrainNode{DrainNode: &pb.DrainNode{
			NodeId: req.NodeId, Cancel: req.Cancel, Decommission: req.Decommission, LiveNodes: liveTablets(n.State().Nodes(), g),
		}}})
		if err != nil {
			return err
		}
		if err := metastate.ResultError(res); err != nil {
			return err
		}
		// The result is the state machine's: name the tables in a copy.
		d := proto.CloneOf(res.GetDrain())
		if err := nameDrainedBuckets(n.State(), d.Buckets); err != nil {
			return err
		}
		resp = &pb.DrainNodeResponse{Node: d.Node, Buckets: d.Buckets, Index: res.GetIndex(), Unchanged: res.GetUnchanged()}
		member, known := g.Member(req.NodeId)
		resp.Alive = aliveAsRegistered(d.Node, member, known)
		m.r.logDrain(req, resp)
		return nil
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.DrainNode(ctx, req)
		return err
	})
	return resp, err
}

// nameDrainedBuckets sets the database and table name of each bucket, as
// st holds them now (a table dropped since keeps none).
func nameDrainedBuckets(st *metastate.State, buckets []*pb.BucketDrain) error {
	if len(buckets) == 0 {
		return nil
	}
	return st.Read(func(v *metastate.View) error {
		names, err := newBucketNames(v)
		if err != nil {
			return err
		}
		for _, e := range buckets {
			t, partition, err := names.name(e.Bucket.GetTableId())
			if err != nil {
				return err
			}
			if t != nil {
				e.Database, e.Table, e.Partition = t.Database, t.Name, partition
			}
		}
		return nil
	})
}

// logDrain logs what a drain did: each leadership moved, and each that
// could not move, at warn level (stopping the node takes those buckets
// offline until it is back).
func (r *Role) logDrain(req *pb.DrainNodeRequest, resp *pb.DrainNodeResponse) {
	if req.Cancel {
		r.log.Info("node no longer draining", "node", req.NodeId, "index", resp.Index)
		return
	}
	for _, e := range resp.Buckets {
		b := e.Bucket
		attrs := []any{"node", req.NodeId, "table", e.Database + "." + e.Table, "bucket", b.Bucket, "index", resp.Index}
		if e.Partition != "" {
			attrs = append(attrs, "partition", e.Partition)
		}
		if e.Moved {
			r.log.Info("drain: leadership moved", append(attrs, "leader", b.Leader, "leader_epoch", b.LeaderEpoch)...)
		} else {
			r.log.Warn("drain: leadership not moved", append(attrs, "reason", e.Error)...)
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
	res, err := m.r.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_CommitRemoteLog{CommitRemoteLog: req.Commit}})
	if err != nil {
		return nil, err
	}
	return &pb.CommitRemoteLogResponse{Bucket: res.GetBucket()}, nil
}

// CommitLake commits a lake tiering task's new lake version through
// Raft; the state machine refuses it (FENCED) unless the task is the
// node's at the epoch it names and the version it built on is the
// committed one. The task's request id goes into the command, so a retry
// after an unknown outcome gets the first attempt's result.
func (m *metaService) CommitLake(ctx context.Context, req *pb.CommitLakeRequest) (*pb.CommitLakeResponse, error) {
	if req.Commit == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "commit lake without a commit")
	}
	res, err := m.r.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_CommitLake{CommitLake: req.Commit}})
	if err != nil {
		return nil, err
	}
	return &pb.CommitLakeResponse{Table: res.GetTable()}, nil
}

// CommitKVSnapshot commits a primary-key bucket leader's KV snapshot
// through Raft; the state machine refuses it (FENCED) unless the leader
// and its epoch are current.
func (m *metaService) CommitKVSnapshot(ctx context.Context, req *pb.CommitKVSnapshotRequest) (*pb.CommitKVSnapshotResponse, error) {
	if req.Commit == nil {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "commit KV snapshot without a commit")
	}
	res, err := m.r.propose(ctx, &pb.Command{RequestId: requestID(req.RequestId),
		Op: &pb.Command_CommitKvSnapshot{CommitKvSnapshot: req.Commit}})
	if err != nil {
		return nil, err
	}
	return &pb.CommitKVSnapshotResponse{Bucket: res.GetBucket()}, nil
}
