package meta

import (
	"cmp"
	"context"
	"github.com/floedb/floe/internal/fanout"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

const (
	// replicaLogsFanout bounds the ReplicaLogs calls an unclean election
	// has in flight at once.
	replicaLogsFanout = 16
	// replicaLogsTimeout bounds the whole gathering of replica log states
	// before an unclean election: a node that has not answered by then
	// counts as unknown, and the election goes ahead without it.
	replicaLogsTimeout = 2 * time.Second
)

// replicaLogs gathers, before an unclean election, what the live replicas
// of each bucket without a live ISR member hold, so the state machine can
// prefer the longest log of the latest epoch (rule "damage and the last
// copy" 2). Each node is asked once, for all its buckets, at most
// replicaLogsFanout at once and all within replicaLogsTimeout. A node that
// does not answer, or answers with an error, is logged and left out: its
// replicas rank after every replica whose log is known, and are still
// elected when nothing else can be. The answer is a hint taken at
// proposal time: the command carries it, and the state machine decides on
// the committed state at apply time.
func (r *Role) replicaLogs(ctx context.Context, st *metastate.State, database, table, partition string, bucket *int32,
	live []uint32) ([]*pb.ReplicaLog, error) {
	var tableID uint64
	asks := map[uint32][]int32{} // node → buckets to ask it about
	err := st.Read(func(v *metastate.View) error {
		t, p, buckets, err := v.PhysicalTable(database, table, partition)
		if err != nil {
			return err
		}
		tableID = t.GetId()
		if p != nil {
			tableID = p.GetId()
		}
		isLive := func(id uint32) bool { return slices.Contains(live, id) }
		n := 0
		for _, b := range buckets {
			if bucket != nil && b.GetBucket() != *bucket || slices.ContainsFunc(b.GetIsr(), isLive) {
				continue // not asked for, or a clean election
			}
			for _, id := range b.GetReplicas() {
				if isLive(id) && n < metastate.MaxReplicaLogs {
					asks[id] = append(asks[id], b.GetBucket())
					n++
				}
			}
		}
		return nil
	})
	if err != nil || len(asks) == 0 {
		return nil, err
	}
	addrs := map[uint32]string{}
	for _, rec := range st.Nodes() {
		addrs[rec.GetId()] = rec.GetRpcAddress()
	}

	ctx, cancel := context.WithTimeout(ctx, replicaLogsTimeout)
	defer cancel()
	var mu sync.Mutex
	var out []*pb.ReplicaLog
	fanout.Until(ctx, slices.Sorted(maps.Keys(asks)), replicaLogsFanout, func(id uint32) {
		buckets := asks[id]
		resp, err := pb.NewDRPCTabletClient(r.pool.Conn(addrs[id])).ReplicaLogs(ctx,
			&pb.ReplicaLogsRequest{TableId: tableID, Buckets: buckets})
		if err != nil {
			r.log.Warn("unclean election: a node did not report its replicas' logs; they rank last",
				"node", id, "addr", addrs[id], "table", database+"."+table, "partition", partition, "err", err)
			return
		}
		logs := answeredLogs(id, buckets, resp.GetLogs())
		mu.Lock()
		out = append(out, logs...)
		mu.Unlock()
	}, func(id uint32) {
		r.log.Warn("unclean election: no time left to ask a node for its replicas' logs; they rank last",
			"node", id, "table", database+"."+table, "partition", partition, "err", ctx.Err())
	})
	// In node order, so the command reads the same whichever node answered
	// first.
	slices.SortFunc(out, func(a, b *pb.ReplicaLog) int {
		return cmp.Or(cmp.Compare(a.NodeId, b.NodeId), cmp.Compare(a.Bucket, b.Bucket))
	})
	return out, nil
}

// answeredLogs keeps of node id's answer the first state of each bucket it
// was asked about, as node id's (a node speaks for its own replicas only),
// and drops states no log can have, which would make the state machine
// refuse the whole election.
func answeredLogs(id uint32, asked []int32, logs []*pb.ReplicaLog) []*pb.ReplicaLog {
	want := make(map[int32]bool, len(asked))
	for _, b := range asked {
		want[b] = true
	}
	var out []*pb.ReplicaLog
	for _, l := range logs {
		if !want[l.GetBucket()] || l.GetLatestEpoch() < -1 || l.GetEndOffset() < 0 {
			continue
		}
		want[l.GetBucket()] = false
		out = append(out, &pb.ReplicaLog{NodeId: id, Bucket: l.GetBucket(), LatestEpoch: l.GetLatestEpoch(), EndOffset: l.GetEndOffset()})
	}
	return out
}
