package client

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport/pb"
)

// onePerBatch makes every row of appendIDs a batch of its own, sent at
// once.
func onePerBatch(maxInFlight int) AppendWriterOptions {
	return AppendWriterOptions{BatchBytes: 2 * record.HeaderSize, Linger: -1, MaxInFlight: maxInFlight}
}

// TestPipelineKeepsMaxInFlight: while acks=all cannot complete (the
// follower's fetches are held), a writer has MaxInFlight batches of the
// bucket at the leader, no more; once released every row is written once,
// in order.
func TestPipelineKeepsMaxInFlight(t *testing.T) {
	for _, inFlight := range []int{1, 3, 5} {
		t.Run(fmt.Sprint(inFlight), func(t *testing.T) { testPipelineKeepsMaxInFlight(t, inFlight) })
	}
}

func testPipelineKeepsMaxInFlight(t *testing.T, inFlight int) {
	{
		fc, c := startCluster(t)
		tbl := fc.createTable(c, "events", testSchema, 1, 2)
		w := newWriter(t, tbl, onePerBatch(inFlight))
		// The first batch of a writer id goes alone: let it through.
		first := appendIDs(t, w, tbl, 0, 1)
		if err := w.Flush(guardCtx(t)); err != nil {
			t.Fatal(err)
		}
		leader := fc.leaderProxy(tbl, 0)
		release := leader.Hold(testcluster.RPCFetch, testcluster.FromNodes)
		before := leader.Calls(testcluster.RPCProduce)
		futures := append(first, appendIDs(t, w, tbl, 1, 20)...)
		waitFor(t, "MaxInFlight batches at the leader", func() bool {
			return leader.Calls(testcluster.RPCProduce)-before >= inFlight
		})
		for _, f := range futures[1:] {
			select {
			case <-f.Done():
				t.Fatalf("MaxInFlight %d: a batch was acknowledged while the follower could not fetch", inFlight)
			default:
			}
		}
		if got := leader.Calls(testcluster.RPCProduce) - before; got != inFlight {
			t.Fatalf("MaxInFlight %d: %d batches sent before any answer", inFlight, got)
		}
		release()
		if err := w.Flush(guardCtx(t)); err != nil {
			t.Fatal(err)
		}
		checkWritten(t, fc, tbl, futures, 0)
	}
}

// TestPipelineRetriesInOrder: faults in the middle of a pipeline (a lost
// answer to a batch that was written, refusals of batches that were not,
// so that the ones after them meet OUT_OF_ORDER_SEQUENCE) make the writer
// resend from the oldest unanswered batch; every row is written once, in
// order, and its future names where.
func TestPipelineRetriesInOrder(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "events", testSchema, 1, 1)
	p := fc.leaderProxy(tbl, 0)
	p.LoseRepliesAfter(testcluster.RPCProduce, 3, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1)
	p.FailCallsAfter(testcluster.RPCProduce, 10, pb.ErrorCode_ERROR_CODE_UNAVAILABLE, 2)
	p.LoseRepliesAfter(testcluster.RPCProduce, 20, pb.ErrorCode_ERROR_CODE_TIMEOUT, 2)
	w := newWriter(t, tbl, onePerBatch(5))
	futures := appendIDs(t, w, tbl, 0, 60)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)
	if st := w.Stats(); st.Failed != 0 || st.Acknowledged != 60 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPipelineNewWriterAfterRefusal: a batch refused for good in the
// middle of a pipeline fails alone; the batches after it, refused
// OUT_OF_ORDER_SEQUENCE because it is missing, go again under a new writer
// id and are written once, in order.
func TestPipelineNewWriterAfterRefusal(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "events", testSchema, 1, 1)
	fc.leaderProxy(tbl, 0).FailCallsAfter(testcluster.RPCProduce, 4, pb.ErrorCode_ERROR_CODE_INVALID_RECORD, 1)
	w := newWriter(t, tbl, onePerBatch(5))
	futures := appendIDs(t, w, tbl, 0, 30)
	_ = w.Flush(guardCtx(t))
	var written []*AppendFuture
	failedBatches := map[*pendingBatch]bool{}
	for _, f := range futures {
		if _, err := f.Wait(guardCtx(t)); err != nil {
			failedBatches[f.b] = true
			continue
		}
		written = append(written, f)
	}
	if len(failedBatches) != 1 {
		t.Fatalf("%d batches failed, want the one refused", len(failedBatches))
	}
	// checkWritten wants consecutive ids: compare the stored ids instead.
	recs := fc.records(tbl, 0)
	if len(recs) != len(written) {
		t.Fatalf("%d rows stored, %d acknowledged", len(recs), len(written))
	}
	last := int64(-1)
	for i, r := range recs {
		id := rowID(tbl, r.Row)
		if id <= last {
			t.Fatalf("row %d stored after row %d", id, last)
		}
		last = id
		res, _ := written[i].Wait(guardCtx(t))
		if res.Offset != r.Offset {
			t.Fatalf("acknowledged row %d names offset %d, stored at %d", i, res.Offset, r.Offset)
		}
	}
}

// TestSendersDoNotWaitOnAStuckRefresh: when the metadata service stops
// answering, a sender's refresh after a failed call gives up in time, so the
// table's senders (which share one refresh) fail their batches at their
// DeliveryTimeout instead of waiting on the refresh for good (the chaos
// suite's wiped-node run hung so while a full disk had stopped its nodes).
func TestSendersDoNotWaitOnAStuckRefresh(t *testing.T) {
	cl, err := testcluster.Start(t.Context(), testcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	db := testcluster.NameFor(t.Name())
	if _, err := cl.CreateTable(t.Context(), testcluster.TableSpec{Database: db, Name: "events", Schema: testSchema, Buckets: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(t.Context(), cl.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tbl, err := c.Table(t.Context(), db, "events")
	if err != nil {
		t.Fatal(err)
	}
	// Every write is refused as by a node that no longer leads, and every
	// metadata lookup waits at the proxy: the nodes accept connections and
	// never answer, as nodes stuck on a full disk do.
	for _, nd := range cl.Nodes() {
		release := nd.Proxy().Hold("/floe.v1.Meta/GetTable", testcluster.FromClients)
		t.Cleanup(release)
		nd.Proxy().FailCalls(testcluster.RPCProduce, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1_000_000)
	}
	w := newWriter(t, tbl, AppendWriterOptions{DeliveryTimeout: 2 * time.Second, RequestTimeout: 300 * time.Millisecond})
	f := appendIDs(t, w, tbl, 0, 1)[0]
	if _, err := f.Wait(guardCtx(t)); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("write with every node unreachable: %v, want a delivery timeout", err)
	}
}
