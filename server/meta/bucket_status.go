package meta

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/floedb/floe/internal/fanout"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

const (
	// hwFanout bounds the ListOffsets calls a bucket status has in flight
	// at once, over all leaders.
	hwFanout = 16
	// hwTimeout bounds the whole collection of high watermarks: a leader
	// that has not answered by then is reported with an error, and the
	// status goes out without its high watermarks.
	hwTimeout = 2 * time.Second
)

// BucketStatus is answered by the leader: every bucket of every table as its
// metadata holds them after a linearizable read, with the high watermark
// each bucket's leader reports (highWatermarks).
func (m *metaService) BucketStatus(ctx context.Context, req *pb.BucketStatusRequest) (*pb.BucketStatusResponse, error) {
	var resp *pb.BucketStatusResponse
	err := m.r.onLeader(ctx, func(ctx context.Context) error {
		var err error
		resp, err = m.r.bucketStatus(ctx)
		return err
	}, func(ctx context.Context, c pb.DRPCMetaClient) error {
		var err error
		resp, err = c.BucketStatus(ctx, req)
		return err
	})
	return resp, err
}

func (r *Role) bucketStatus(ctx context.Context) (*pb.BucketStatusResponse, error) {
	n := r.node.Load()
	if err := n.LinearizableRead(ctx); err != nil {
		return nil, err
	}
	img, err := n.State().Image()
	if err != nil {
		return nil, err
	}
	tables := make(map[uint64]*pb.TableRecord, len(img.Tables))
	for _, t := range img.Tables {
		tables[t.Id] = t
	}
	addrs := make(map[uint32]string, len(img.Nodes))
	for _, rec := range img.Nodes {
		addrs[rec.Id] = rec.RpcAddress
	}
	parts := partitionsOf(img)
	out := make([]*pb.BucketStatus, 0, len(img.Buckets))
	for _, b := range img.Buckets {
		// A partition's buckets are keyed by its id, and named by its table.
		t, partition := tables[b.TableId], ""
		if p := parts[b.TableId]; p != nil {
			t, partition = tables[p.GetTableId()], p.GetName()
		}
		if t == nil {
			continue
		}
		out = append(out, &pb.BucketStatus{Database: t.Database, Table: t.Name, Partition: partition, Replication: t.Replication,
			Bucket: &pb.BucketRecord{
				TableId: b.TableId, Bucket: b.Bucket, Replicas: b.Replicas, Leader: b.Leader, LeaderEpoch: b.LeaderEpoch,
				Isr: b.Isr, BucketEpoch: b.BucketEpoch, UncleanElections: b.UncleanElections,
			}})
	}
	slices.SortFunc(out, func(a, b *pb.BucketStatus) int {
		return cmp.Or(cmp.Compare(a.Database, b.Database), cmp.Compare(a.Table, b.Table), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.Bucket.Bucket, b.Bucket.Bucket))
	})
	r.highWatermarks(ctx, out, addrs)
	return &pb.BucketStatusResponse{Buckets: out, AppliedIndex: img.Index}, nil
}

// highWatermarks asks each online bucket's leader (at addrs) for its high
// watermark, at most hwFanout calls at once and all within hwTimeout, and
// sets it on the bucket, or the error that kept it. A leader that does not
// answer at all (no connection, no answer in time) is asked nothing more:
// its other buckets get the same error at once, so a dead node costs one
// timeout, not one per bucket. A leader that answers with an error (it no
// longer leads, say) is asked for its other buckets as usual.
func (r *Role) highWatermarks(ctx context.Context, buckets []*pb.BucketStatus, addrs map[uint32]string) {
	ctx, cancel := context.WithTimeout(ctx, hwTimeout)
	defer cancel()
	var mu sync.Mutex
	silent := map[uint32]*transport.Error{} // leader → why it does not answer
	failed := func(st *pb.BucketStatus, e *transport.Error) { st.ErrorCode, st.Error = e.Code, e.Message }
	var asks []*pb.BucketStatus
	for _, st := range buckets {
		leader := st.Bucket.Leader
		if leader == 0 {
			continue // offline: nobody to ask
		}
		if _, ok := addrs[leader]; !ok {
			failed(st, &transport.Error{Code: pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, Message: fmt.Sprintf("leader node %d is not registered", leader)})
			continue
		}
		asks = append(asks, st)
	}
	fanout.Until(ctx, asks, hwFanout, func(st *pb.BucketStatus) {
		leader := st.Bucket.Leader
		addr := addrs[leader]
		mu.Lock()
		why := silent[leader]
		mu.Unlock()
		if why != nil {
			failed(st, why)
			return
		}
		resp, err := pb.NewDRPCTabletClient(r.pool.Conn(addr)).ListOffsets(ctx, &pb.ListOffsetsRequest{
			TableId: st.Bucket.TableId, Bucket: st.Bucket.Bucket, Spec: pb.OffsetSpec_OFFSET_SPEC_LATEST})
		var coded *transport.Error
		switch {
		case err == nil:
			st.HighWatermark = &resp.Offset
		case errors.As(err, &coded) && !errors.Is(err, transport.ErrUnavailable):
			failed(st, &transport.Error{Code: coded.Code, Message: fmt.Sprintf("leader node %d: %v", leader, err)})
		default:
			why := leaderSilent(leader, addr, err)
			mu.Lock()
			silent[leader] = why
			mu.Unlock()
			failed(st, why)
		}
	}, func(st *pb.BucketStatus) {
		failed(st, leaderSilent(st.Bucket.Leader, addrs[st.Bucket.Leader], ctx.Err()))
	})
}

// leaderSilent is the error of a leader that did not answer a bucket
// status call.
func leaderSilent(leader uint32, addr string, err error) *transport.Error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &transport.Error{Code: pb.ErrorCode_ERROR_CODE_TIMEOUT,
			Message: fmt.Sprintf("leader node %d at %s did not answer within %v", leader, addr, hwTimeout)}
	}
	return &transport.Error{Code: pb.ErrorCode_ERROR_CODE_UNAVAILABLE,
		Message: fmt.Sprintf("leader node %d at %s did not answer: %v", leader, addr, err)}
}
