package client

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// produce writes rows from..to-1 and waits for them.
func produce(t *testing.T, w *AppendWriter, tbl *Table, from, to int64) {
	t.Helper()
	appendIDs(t, w, tbl, from, to)
	if err := w.Flush(guardCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func newScanner(t *testing.T, tbl *Table, opts LogScannerOptions) *LogScanner {
	t.Helper()
	if opts.Logger == nil {
		// A scanner that stalls says why in the failing test's output.
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s, err := tbl.NewLogScanner(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pollUntil polls until n records came, failing on errors, duplicates or
// records out of order within a bucket.
func pollUntil(t *testing.T, s *LogScanner, n int) []ScanRecord {
	t.Helper()
	ctx := guardCtx(t)
	var got []ScanRecord
	type bucketOf struct {
		partition string
		bucket    int32
	}
	next := make(map[bucketOf]int64)
	for len(got) < n {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d records: %v; subscriptions: %s", len(got), err, s.describeSubs())
		}
		for _, r := range recs {
			b := bucketOf{r.Partition, r.Bucket}
			if want, ok := next[b]; ok && r.Offset != want {
				t.Fatalf("%s bucket %d: offset %d after %d", r.Partition, r.Bucket, r.Offset, want-1)
			}
			next[b] = r.Offset + 1
		}
		got = append(got, recs...)
	}
	if len(got) != n {
		t.Fatalf("%d records, want %d", len(got), n)
	}
	return got
}

// checkScanned checks records against what the cluster stores.
func checkScanned(t *testing.T, fc *testCluster, tbl *Table, got []ScanRecord) {
	t.Helper()
	stored := make(map[int32][]testcluster.Record)
	for _, r := range got {
		if stored[r.Bucket] == nil {
			stored[r.Bucket] = fc.records(tbl, r.Bucket)
		}
		s := stored[r.Bucket][r.Offset]
		if !bytes.Equal(s.Row, r.Row) || s.Timestamp != r.Timestamp.UnixMilli() ||
			r.Change != record.AppendOnly || r.SchemaID != tbl.SchemaID() {
			t.Fatalf("bucket %d offset %d: scanned %+v, stored %+v", r.Bucket, r.Offset, r, s)
		}
	}
}

func TestScannerReadsAllBuckets(t *testing.T) {
	for _, comp := range []record.Compression{record.CompressionNone, record.CompressionZstd} {
		t.Run(comp.String(), func(t *testing.T) {
			fc, c := startCluster(t)
			tbl := openTable(t, fc, c, "events", 3, "id")
			w := newWriter(t, tbl, AppendWriterOptions{BatchBytes: 512, Compression: comp})
			produce(t, w, tbl, 0, 200)
			s := newScanner(t, tbl, LogScannerOptions{MaxBytes: 1 << 10})
			for b := range tbl.Buckets() {
				if err := s.Subscribe(b, Earliest()); err != nil {
					t.Fatal(err)
				}
			}
			got := pollUntil(t, s, 200)
			checkScanned(t, fc, tbl, got)
			ids := make(map[int64]bool)
			for _, r := range got {
				ids[rowID(tbl, r.Row)] = true
			}
			if len(ids) != 200 {
				t.Fatalf("%d distinct rows", len(ids))
			}
			for b := range tbl.Buckets() {
				hw := fc.highWatermark(tbl, b)
				pos, ok1 := s.Position(b)
				shw, ok2 := s.HighWatermark(b)
				if !ok1 || !ok2 || pos != hw || shw != hw {
					t.Fatalf("bucket %d: position %d (%v), hw %d (%v), want %d", b, pos, ok1, shw, ok2, hw)
				}
			}
		})
	}
}

// TestScannerFollowsLeaderChange: when a bucket's leader moves, the scanner
// finds the new one and reads on without loss or repeat, also when the new
// leader answers its first fetch with UNKNOWN_LEADER_EPOCH.
func TestScannerFollowsLeaderChange(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "events", testSchema, 1, 2)
	w := newWriter(t, tbl, AppendWriterOptions{})
	produce(t, w, tbl, 0, 10)
	s := newScanner(t, tbl, LogScannerOptions{MaxWait: 50 * time.Millisecond})
	if err := s.Subscribe(0, Earliest()); err != nil {
		t.Fatal(err)
	}
	got := pollUntil(t, s, 10)

	leader := fc.moveLeader(tbl, 0)
	produce(t, w, tbl, 10, 20)
	leader.Proxy().RewriteReply(testcluster.RPCFetch, func(msg []byte) []byte {
		return failFetchedBuckets(t, msg, pb.ErrorCode_ERROR_CODE_UNKNOWN_LEADER_EPOCH)
	})
	got = append(got, pollUntil(t, s, 10)...)
	checkScanned(t, fc, tbl, got)
	for i, r := range got {
		if id := rowID(tbl, r.Row); id != int64(i) || r.Offset != int64(i) {
			t.Fatalf("record %d: row %d at offset %d", i, id, r.Offset)
		}
	}
}

// rewriteFetched rewrites every bucket of a marshaled FetchResponse.
func rewriteFetched(t *testing.T, msg []byte, fn func(*pb.FetchedBucket)) []byte {
	var resp pb.FetchResponse
	if err := proto.Unmarshal(msg, &resp); err != nil {
		t.Error(err)
		return msg
	}
	for _, b := range resp.Buckets {
		fn(b)
	}
	out, err := proto.Marshal(&resp)
	if err != nil {
		t.Error(err)
		return msg
	}
	return out
}

// failFetchedBuckets turns a fetch answer into code for every bucket, as a
// leader that is not (yet) at the consumer's epoch answers.
func failFetchedBuckets(t *testing.T, msg []byte, code pb.ErrorCode) []byte {
	return rewriteFetched(t, msg, func(b *pb.FetchedBucket) {
		*b = pb.FetchedBucket{TableId: b.TableId, Bucket: b.Bucket, ErrorCode: code, Error: "injected " + code.String()}
	})
}

// TestScannerStopsAtHighWatermark: records past the high watermark are
// written but not committed, and no Poll returns them until it moves.
func TestScannerStopsAtHighWatermark(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "events", testSchema, 1, 2)
	produce(t, newWriter(t, tbl, AppendWriterOptions{}), tbl, 0, 5)
	// The follower's fetches wait at the leader's door: the leader appends
	// with acks=1, but the high watermark stays at 5.
	release := fc.leaderProxy(tbl, 0).Hold(testcluster.RPCFetch, testcluster.FromNodes)
	defer release()
	produce(t, newWriter(t, tbl, AppendWriterOptions{Acks: AcksLeader}), tbl, 5, 10)
	s := newScanner(t, tbl, LogScannerOptions{MaxWait: 20 * time.Millisecond})
	if err := s.Subscribe(0, Earliest()); err != nil {
		t.Fatal(err)
	}
	got := pollUntil(t, s, 5)
	for range 3 {
		recs, err := s.Poll(guardCtx(t))
		if err != nil || len(recs) != 0 {
			t.Fatalf("poll at the high watermark: %d records, %v", len(recs), err)
		}
	}
	if hw, _ := s.HighWatermark(0); hw != 5 {
		t.Fatalf("high watermark %d, want 5", hw)
	}
	release()
	got = append(got, pollUntil(t, s, 5)...)
	checkScanned(t, fc, tbl, got)
}

func TestScannerStartPositions(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 1)
	w := newWriter(t, tbl, AppendWriterOptions{})
	produce(t, w, tbl, 0, 5)
	recs := fc.records(tbl, 0)
	firstTime := time.UnixMilli(recs[0].Timestamp)

	latest := newScanner(t, tbl, LogScannerOptions{MaxWait: 20 * time.Millisecond})
	if err := latest.Subscribe(0, Latest()); err != nil {
		t.Fatal(err)
	}
	if got, err := latest.Poll(guardCtx(t)); err != nil || len(got) != 0 {
		t.Fatalf("latest: %d records, %v", len(got), err)
	}
	if pos, ok := latest.Position(0); !ok || pos != 5 {
		t.Fatalf("latest resolved to %d (%v), want 5", pos, ok)
	}
	produce(t, w, tbl, 5, 8)
	if got := pollUntil(t, latest, 3); got[0].Offset != 5 {
		t.Fatalf("latest: first offset %d, want 5", got[0].Offset)
	}

	at := newScanner(t, tbl, LogScannerOptions{})
	if err := at.Subscribe(0, AtOffset(6)); err != nil {
		t.Fatal(err)
	}
	if got := pollUntil(t, at, 2); got[0].Offset != 6 {
		t.Fatalf("at offset 6: first offset %d", got[0].Offset)
	}
	if err := at.Subscribe(0, AtTimestamp(firstTime)); err != nil {
		t.Fatal(err)
	}
	if got := pollUntil(t, at, 8); got[0].Offset != 0 {
		t.Fatalf("at timestamp: first offset %d", got[0].Offset)
	}
	if off, err := tbl.ListOffset(guardCtx(t), 0, Latest()); err != nil || off != 8 {
		t.Fatalf("ListOffset(latest) = %d, %v", off, err)
	}
}

// pollForAnswer polls until a Poll brings records or an error: a Poll
// whose fetches are still on their way after MaxWait (a loaded machine)
// returns neither.
func pollForAnswer(t *testing.T, s *LogScanner) ([]ScanRecord, error) {
	t.Helper()
	ctx := guardCtx(t)
	for {
		recs, err := s.Poll(ctx)
		if len(recs) > 0 || err != nil {
			return recs, err
		}
	}
}

func TestScannerErrors(t *testing.T) {
	fc, c := startCluster(t)
	tbl := openTable(t, fc, c, "events", 2)
	w := newWriter(t, tbl, AppendWriterOptions{Linger: time.Hour}) // one batch per bucket: the damage below is in the only one
	produce(t, w, tbl, 0, 20)
	s := newScanner(t, tbl, LogScannerOptions{MaxWait: 20 * time.Millisecond})
	if _, err := s.Poll(guardCtx(t)); !errors.Is(err, ErrNotSubscribed) {
		t.Fatalf("poll without subscriptions: %v", err)
	}
	if err := s.Subscribe(5, Earliest()); err == nil {
		t.Fatal("subscribed to bucket 5 of 2")
	}
	if err := s.Subscribe(0, AtOffset(1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := pollForAnswer(t, s); !errors.Is(err, transport.ErrOutOfRange) {
		t.Fatalf("poll past the end: %v, want OUT_OF_RANGE", err)
	}
	s.Unsubscribe(0)

	// A damaged batch is caught by its CRC, and nothing of it is returned.
	var bucket int32
	for b := range tbl.Buckets() {
		if recs := fc.records(tbl, b); len(recs) > 0 {
			bucket = b
		}
	}
	fc.leaderProxy(tbl, bucket).RewriteReply(testcluster.RPCFetch, func(msg []byte) []byte {
		return rewriteFetched(t, msg, func(b *pb.FetchedBucket) {
			if b.Bucket == bucket && len(b.Records) > 0 {
				b.Records[len(b.Records)-1] ^= 1 // the last byte of the last batch
			}
		})
	})
	if err := s.Subscribe(bucket, Earliest()); err != nil {
		t.Fatal(err)
	}
	recs, err := pollForAnswer(t, s)
	if !errors.Is(err, record.ErrCorruptBatch) || len(recs) != 0 {
		t.Fatalf("poll of a damaged batch: %d records, %v", len(recs), err)
	}
	if pos, _ := s.Position(bucket); pos != 0 {
		t.Fatalf("position moved to %d past a damaged batch", pos)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Poll(context.Background()); !errors.Is(err, ErrScannerClosed) {
		t.Fatalf("poll after Close: %v", err)
	}
}
