package tablet

import (
	"context"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// ReplicaLogs answers the controller's question before an unclean election:
// what this node's replicas of the buckets hold (replica.Manager.LogState),
// whatever their role. Read-only and internal: it changes nothing, and
// once internal calls require a node identity (issue 32) only the
// controller may ask.
func (t *tabletService) ReplicaLogs(ctx context.Context, req *pb.ReplicaLogsRequest) (*pb.ReplicaLogsResponse, error) {
	if len(req.Buckets) > metastate.MaxBuckets {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"replica logs: %d buckets asked, a table has at most %d", len(req.Buckets), metastate.MaxBuckets)
	}
	resp := &pb.ReplicaLogsResponse{}
	for _, bucket := range req.Buckets {
		st, ok := t.m.LogState(replica.BucketID{TableID: req.TableId, Bucket: bucket})
		if !ok {
			continue
		}
		resp.Logs = append(resp.Logs, &pb.ReplicaLog{NodeId: t.r.cfg.NodeID, Bucket: bucket,
			LatestEpoch: st.LatestEpoch, EndOffset: st.EndOffset})
	}
	return resp, nil
}

func (g *tabletGate) ReplicaLogs(ctx context.Context, req *pb.ReplicaLogsRequest) (*pb.ReplicaLogsResponse, error) {
	t, err := g.service()
	if err != nil {
		return nil, err
	}
	return t.ReplicaLogs(ctx, req)
}
