package client

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// checkWritten checks that the cluster holds exactly the rows ids, each
// once, in id order within each bucket, and that every future names its
// row.
func checkWritten(t *testing.T, fc *testCluster, tbl *Table, futures []*AppendFuture, firstID int64) {
	t.Helper()
	stored := make(map[int32][]testcluster.Record)
	seen := make(map[int64]bool)
	for b := range tbl.Buckets() {
		recs := fc.records(tbl, b)
		stored[b] = recs
		last := int64(-1)
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("bucket %d: record %d has offset %d", b, i, r.Offset)
			}
			id := rowID(tbl, r.Row)
			if seen[id] {
				t.Fatalf("bucket %d: row %d written twice", b, id)
			}
			seen[id] = true
			if id <= last {
				t.Fatalf("bucket %d: row %d after row %d", b, id, last)
			}
			last = id
		}
	}
	if len(seen) != len(futures) {
		t.Fatalf("%d rows written, want %d", len(seen), len(futures))
	}
	ctx := guardCtx(t)
	for i, f := range futures {
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("row %d: %v", firstID+int64(i), err)
		}
		recs := stored[res.Bucket]
		if res.Offset < 0 || res.Offset >= int64(len(recs)) {
			t.Fatalf("row %d: offset %d of bucket %d holding %d", firstID+int64(i), res.Offset, res.Bucket, len(recs))
		}
		if id := rowID(tbl, recs[res.Offset].Row); id != firstID+int64(i) {
			t.Fatalf("row %d: its future names offset %d of bucket %d, which holds row %d", firstID+int64(i),
				res.Offset, res.Bucket, id)
		}
		if res.Timestamp.UnixMilli() != recs[res.Offset].Timestamp {
			t.Fatalf("row %d: timestamp %v, stored %d", firstID+int64(i), res.Timestamp, recs[res.Offset].Timestamp)
		}
	}
}

func TestAppendWriterRoundTrip(t *testing.T) {
	for _, comp := range []record.Compression{record.CompressionNone, record.CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			fc, c := startCluster(t)
			tbl := openTable(t, fc, c, "events", 3, "id")
			w := newWriter(t, tbl, AppendWriterOptions{BatchBytes: 1 << 10, Compression: comp})
			futures := appendIDs(t, w, tbl, 0, 300)
			if err := w.Flush(guardCtx(t)); err != nil {
				t.Fatal(err)
			}
			checkWritten(t, fc, tbl, futures, 0)
			for i, f := range futures {
				res, _ := f.Wait(guardCtx(t))
				if want, _ := tbl.BucketOf(testRow(t, tbl, int64(i), "")); res.Bucket != want {
					t.Fatalf("row %d in bucket %d, its key says %d", i, res.Bucket, want)
				}
			}
			if got := w.Buffered(); got != 0 {
				t.Fatalf("%d bytes still buffered after Flush", got)
			}
		})
	}
}

// TestAppendWriterRetriesExactlyOnce: lost acknowledgements, refusals and a
// moved leader make the writer resend batches; every row is written once,
// in order, and its future names where.
func TestAppendWriterRetriesExactlyOnce(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "events", testSchema, 2, 2, "id")
	// The handle now names bucket 1's leader; move it elsewhere.
	fc.moveLeader(tbl, 1)
	notLeader, notEnough := pb.ErrorCode_ERROR_CODE_NOT_LEADER, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS
	p0, p1 := fc.leaderProxy(tbl, 0), fc.leaderProxy(tbl, 1)
	p0.LoseReplies(testcluster.RPCProduce, notLeader, 1) // appended, answer lost
	p0.FailCalls(testcluster.RPCProduce, notEnough, 1)   // refused
	p0.LoseReplies(testcluster.RPCProduce, pb.ErrorCode_ERROR_CODE_TIMEOUT, 1)
	p1.LoseReplies(testcluster.RPCProduce, pb.ErrorCode_ERROR_CODE_UNAVAILABLE, 1)

	w := newWriter(t, tbl, AppendWriterOptions{BatchBytes: 512})
	futures := appendIDs(t, w, tbl, 0, 200)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)

	// The leader moves again mid-stream, and its first answer is lost.
	fc.moveLeader(tbl, 0).Proxy().LoseReplies(testcluster.RPCProduce, notLeader, 1)
	futures = append(futures, appendIDs(t, w, tbl, 200, 400)...)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)
}

// TestFlushReturnsErrors: a batch refused for good fails its rows and the
// next Flush; the writer carries on with later rows, and the Flush after
// that is clean.
func TestFlushReturnsErrors(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	// One batch for the ten rows: a linger of its own is waited even with
	// nothing in flight (the default sends a lone row at once).
	w := newWriter(t, tbl, AppendWriterOptions{Linger: time.Hour})
	fc.leaderProxy(tbl, 0).FailCalls(testcluster.RPCProduce, pb.ErrorCode_ERROR_CODE_INVALID_RECORD, 1)
	failed := appendIDs(t, w, tbl, 0, 10)
	err := w.Flush(guardCtx(t))
	if !errors.Is(err, transport.ErrInvalidRecord) {
		t.Fatalf("Flush: %v, want INVALID_RECORD", err)
	}
	for _, f := range failed {
		if _, err := f.Wait(guardCtx(t)); !errors.Is(err, transport.ErrInvalidRecord) {
			t.Fatalf("future: %v, want INVALID_RECORD", err)
		}
	}
	futures := appendIDs(t, w, tbl, 10, 20)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatalf("second Flush: %v", err)
	}
	checkWritten(t, fc, tbl, futures, 10)
}

// TestDeliveryTimeout: a bucket without a leader fails its batch once
// DeliveryTimeout has passed, saying why.
func TestDeliveryTimeout(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	// The bucket's one replica stops: the bucket has no leader until it
	// comes back.
	leader := fc.leader(tbl, 0)
	if err := leader.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fc.Restart(context.Background(), leader); err != nil {
			t.Error(err)
		}
	})
	if _, err := fc.WaitLeader(t.Context(), tbl.info.Database, tbl.info.Name, 0, func(l uint32) bool { return l == 0 }); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The batch first takes the writer its id, a metadata commit: the
	// timeout leaves room for it under load (CI once spent all of 200 ms
	// there), so what the batch runs out of time on is the missing leader.
	w := newWriter(t, tbl, AppendWriterOptions{DeliveryTimeout: 2 * time.Second})
	f := appendIDs(t, w, tbl, 0, 1)[0]
	_, err := f.Wait(guardCtx(t))
	if !errors.Is(err, ErrDeliveryTimeout) || !errors.Is(err, ErrNoLeader) {
		t.Fatalf("err = %v, want a delivery timeout after no leader", err)
	}
	if err := w.Flush(guardCtx(t)); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("Flush: %v", err)
	}
}

// TestAppendBlocksWhenBufferFull: Append waits while the rows held fill
// MaxBufferedBytes, honours its context meanwhile, and goes on once a batch
// is acknowledged.
func TestAppendBlocksWhenBufferFull(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	row := testRow(t, tbl, 0, "0123456789")
	recordBytes := int64(record.RecordSize(len(row)))
	const held = 4
	w := newWriter(t, tbl, AppendWriterOptions{
		BatchBytes:       2 * record.HeaderSize, // one row per batch
		MaxBufferedBytes: max(held*recordBytes, 2*record.HeaderSize),
		Linger:           -1,
	})
	if w.opts.MaxBufferedBytes != held*recordBytes {
		t.Fatalf("test rows of %d bytes too small for the batch size", recordBytes)
	}
	release := fc.leaderProxy(tbl, 0).Hold(testcluster.RPCProduce, testcluster.FromClients)
	defer release()
	ctx := guardCtx(t)
	var futures []*AppendFuture
	for id := range int64(held) {
		f, err := w.Append(ctx, testRow(t, tbl, id, "0123456789"))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if got := w.Buffered(); got != held*recordBytes {
		t.Fatalf("buffered %d, want %d", got, held*recordBytes)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Append(cancelled, testRow(t, tbl, held, "0123456789")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append to a full buffer with a cancelled context: %v", err)
	}
	type appended struct {
		f   *AppendFuture
		err error
	}
	blocked := make(chan appended, 1)
	go func() {
		f, err := w.Append(ctx, testRow(t, tbl, held, "0123456789"))
		blocked <- appended{f, err}
	}()
	release()
	var last appended
	select {
	case last = <-blocked:
	case <-ctx.Done():
		t.Fatal("Append still blocked after the buffer drained")
	}
	if last.err != nil {
		t.Fatal(last.err)
	}
	futures = append(futures, last.f)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)
}

// TestCloseGivesUp: Close whose context ends fails what is not yet
// acknowledged, and stops the writer.
func TestCloseGivesUp(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	w, err := tbl.NewAppendWriter(AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := fc.leaderProxy(tbl, 0).Hold(testcluster.RPCProduce, testcluster.FromClients)
	defer release()
	f := appendIDs(t, w, tbl, 0, 1)[0]
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close: %v", err)
	}
	if _, err := f.Wait(guardCtx(t)); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("future: %v, want ErrWriterClosed", err)
	}
	if _, err := w.Append(guardCtx(t), testRow(t, tbl, 1, "")); !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := w.Close(guardCtx(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseFlushes: Close sends what is buffered and waits for it.
func TestCloseFlushes(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 2)
	w, err := tbl.NewAppendWriter(AppendWriterOptions{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	futures := appendIDs(t, w, tbl, 0, 50)
	if err := w.Close(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)
}

// TestAppendValidates: an invalid row or JSON object is refused at once,
// with the codec's error, and nothing is buffered.
func TestAppendValidates(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	w := newWriter(t, tbl, AppendWriterOptions{})
	if _, err := w.Append(guardCtx(t), []byte{1, 2, 3}); !errors.Is(err, record.ErrInvalidRow) {
		t.Fatalf("Append(garbage): %v", err)
	}
	_, err := w.AppendJSON(guardCtx(t), []byte(`{"id":"seven"}`))
	var ce *record.ColumnError
	if !errors.As(err, &ce) || ce.Column != "id" || !errors.Is(err, record.ErrWrongType) {
		t.Fatalf("AppendJSON(bad id): %v", err)
	}
	if w.Buffered() != 0 {
		t.Fatal("a refused row was buffered")
	}
	f, err := w.AppendJSON(guardCtx(t), []byte(`{"id":7,"name":"seven"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	recs := fc.records(tbl, 0)
	if len(recs) != 1 || !bytes.Equal(recs[0].Row, testRow(t, tbl, 7, "seven")) {
		t.Fatalf("stored %v", recs)
	}
	if res, err := f.Wait(guardCtx(t)); err != nil || res.Offset != 0 {
		t.Fatalf("future: %+v, %v", res, err)
	}
}

// TestStickyBatchingSpreadsRows: rows of a table without a bucket key
// reach every bucket, a batch's worth at a time.
func TestStickyBatchingSpreadsRows(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 3)
	w := newWriter(t, tbl, AppendWriterOptions{BatchBytes: 1 << 10})
	futures := appendIDs(t, w, tbl, 0, 300)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
	checkWritten(t, fc, tbl, futures, 0)
	for b := range tbl.Buckets() {
		if recs := fc.records(tbl, b); len(recs) == 0 {
			t.Fatalf("bucket %d got no rows", b)
		}
	}
}

func TestAppendWriterRefusesBadOptions(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	for _, opts := range []AppendWriterOptions{
		{BatchBytes: -1},
		{BatchBytes: 10},
		{MaxBufferedBytes: 1 << 10},
		{Acks: 9},
		{Compression: 7},
		{DeliveryTimeout: -time.Second},
	} {
		if _, err := tbl.NewAppendWriter(opts); err == nil {
			t.Errorf("NewAppendWriter(%+v) succeeded", opts)
		}
	}
}
