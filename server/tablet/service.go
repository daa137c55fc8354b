package tablet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"storj.io/drpc"

	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// tabletService implements pb.DRPCTabletServer over the replica manager.
type tabletService struct {
	m *replica.Manager
	r *Role // KV snapshots commit through the role
}

var _ pb.DRPCTabletServer = (*tabletService)(nil)

func (t *tabletService) Produce(ctx context.Context, req *pb.ProduceRequest) (*pb.ProduceResponse, error) {
	return t.m.Produce(ctx, req)
}

func (t *tabletService) Fetch(ctx context.Context, req *pb.FetchRequest) (*pb.FetchResponse, error) {
	return t.m.Fetch(ctx, req)
}

// Fetches serves a follower's stream of fetches: each request is read,
// answered as Fetch answers it (or in the stream's fetch session, when
// the follower asks for one), and only then is the next one read. A
// failed fetch ends the stream with its error, as it would end the call;
// the follower opens a new stream for its next round.
func (t *tabletService) Fetches(stream pb.DRPCTablet_FetchesStream) error {
	ctx := stream.Context()
	session := replica.NewFetchSession()
	for {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		resp, err := t.m.FetchInSession(ctx, session, req)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
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
	return t.r.snapshotBucket(ctx, replica.BucketID{TableID: req.TableId, Bucket: req.Bucket})
}

// Service is the Tablet service of the role: UNAVAILABLE until Start
// opened the replicas.
func (r *Role) Service() pb.DRPCTabletServer { return &tabletGate{r: r} }

// tabletGate answers UNAVAILABLE until the replica manager runs.
type tabletGate struct{ r *Role }

var _ pb.DRPCTabletServer = (*tabletGate)(nil)

func (g *tabletGate) service() (*tabletService, error) {
	if !g.r.ready.Load() {
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is starting", g.r.cfg.NodeID)
	}
	return &tabletService{m: g.r.replicas, r: g.r}, nil
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

func (g *tabletGate) Fetches(stream pb.DRPCTablet_FetchesStream) error {
	t, err := g.service()
	if err != nil {
		return err
	}
	return t.Fetches(stream)
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

func (g *tabletGate) Writes(stream pb.DRPCTablet_WritesStream) error {
	t, err := g.service()
	if err != nil {
		return err
	}
	return t.Writes(stream)
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

// writesInFlight bounds the calls of one Writes stream being served at
// once; the stream's reader waits (and TCP pushes back on the client)
// while that many are.
const writesInFlight = 256

// Writes serves a client's ordered stream of write calls: each call takes
// its turn at its bucket's leader as it is read, so a writer's pipelined
// batches are decided in the order it sent them, and is then served on a
// goroutine of its own, which also answers it (resultWriter): no goroutine
// is woken per answer, and answers that finish while one is being written
// go out together, a write per burst rather than per call.
func (t *tabletService) Writes(stream pb.DRPCTablet_WritesStream) error {
	ctx := stream.Context()
	var raw drpc.Stream = stream
	if g, ok := stream.(interface{ GetStream() drpc.Stream }); ok {
		raw = g.GetStream()
	}
	results := newResultWriter(transport.NewMessageWriter(raw))
	var wg sync.WaitGroup
	defer wg.Wait() // every call answered (or its answer dropped) before the handler returns
	slots := make(chan struct{}, writesInFlight)
	for {
		call, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		if ctx.Err() != nil {
			// The client gave the stream up (its calls failed there, their
			// retries may be on another stream already): a call read since
			// takes no turn behind theirs.
			return nil
		}
		start := time.Now()
		run := t.m.StartWrite(call)
		id, rpc := call.Id, writeCallRPC(call)
		wg.Go(func() {
			defer func() { <-slots }()
			res := &pb.WriteResult{Id: id}
			resp, err := runWrite(ctx, run)
			if err != nil {
				res.ErrorCode, res.ErrorMessage = transport.WireCodeOf(err)
			} else {
				res.Response = resp
			}
			t.r.deps.RPCs.ObserveRPC(rpc, time.Since(start), err != nil, res.ErrorCode)
			results.send(res)
		})
	}
}

// Labels of the write calls of a Tablet.Writes stream: each is counted
// as a call of its own, besides the stream.
const (
	WritesProduceRPC = "/floe.v1.Tablet/Writes/Produce"
	WritesPutKvRPC   = "/floe.v1.Tablet/Writes/PutKv"
)

// writeCallRPC is the name a Writes stream's call is counted under.
func writeCallRPC(call *pb.WriteCall) string {
	if _, ok := call.Call.(*pb.WriteCall_PutKv); ok {
		return WritesPutKvRPC
	}
	return WritesProduceRPC
}

// resultWriter answers the calls of one Writes stream. A call's goroutine
// queues its result and, unless another is writing, becomes the writer: it
// writes every queued result, flushes them together and repeats while more
// queued meanwhile. At most writesInFlight results wait: past that a call
// waits (holding its slot) until the writer takes them, so a client that
// stops reading its answers stops the reading of its calls, through TCP,
// instead of growing the queue. After a failed write results are only
// dropped: the stream is gone and the client fails its calls.
type resultWriter struct {
	w *transport.MessageWriter

	mu      sync.Mutex
	taken   sync.Cond // the writer took the queue; L is mu
	queue   []*pb.WriteResult
	spare   []*pb.WriteResult // the last batch written, reused as the next queue
	writing bool
	waiting int // calls waiting for the writer to take the queue
	failed  error
}

func newResultWriter(w *transport.MessageWriter) *resultWriter {
	rw := &resultWriter{w: w}
	rw.taken.L = &rw.mu
	return rw
}

func (rw *resultWriter) send(res *pb.WriteResult) {
	rw.mu.Lock()
	for rw.writing && len(rw.queue) >= writesInFlight {
		rw.waiting++
		rw.taken.Wait()
		rw.waiting--
	}
	rw.queue = append(rw.queue, res)
	if rw.writing {
		rw.mu.Unlock()
		return // the writer takes it with the next batch
	}
	rw.writing = true
	// Calls completed by the same event (a group commit, a high watermark
	// moving) are finishing now: let them queue their results first, so
	// one flush carries them all.
	rw.mu.Unlock()
	runtime.Gosched()
	rw.mu.Lock()
	for len(rw.queue) > 0 {
		batch := rw.queue
		rw.queue = rw.spare[:0]
		failed := rw.failed
		rw.taken.Broadcast()
		rw.mu.Unlock()
		for _, r := range batch {
			if failed == nil {
				failed = rw.w.Write(r)
			}
		}
		if failed == nil {
			failed = rw.w.Flush()
		}
		clear(batch)
		rw.mu.Lock()
		rw.failed = failed
		rw.spare = batch
	}
	rw.writing = false
	rw.mu.Unlock()
}

// runWrite runs a write call, turning a panic into the call's INTERNAL
// error as the transport does for unary calls: the node carries on.
func runWrite(ctx context.Context, run func(context.Context) (*pb.ProduceResponse, error)) (resp *pb.ProduceResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic serving a write call: %v", p)
		}
	}()
	return run(ctx)
}
