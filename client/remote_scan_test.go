package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/internal/testkit/s3test"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport/pb"
)

// tieredProps make a table roll 64 KiB segments and keep one sealed
// segment locally once remote: a few hundred rows reach remote storage.
var tieredProps = map[string]string{"log.segment.bytes": "64KiB", "log.local.segments": "1"}

// produceTiered writes rows 0..n-1 of about 1 KB each into tbl.
func produceTiered(t *testing.T, tbl *Table, n int64) {
	t.Helper()
	w, err := tbl.NewAppendWriter(AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	ctx := guardCtx(t)
	// Random text (base64, which compresses to about 3/4) fills segments
	// in the arrow format with zstd as well as in rows.
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 750)
	for id := range n {
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		pad := base64.StdEncoding.EncodeToString(raw)
		if _, err := w.Append(ctx, testRow(t, tbl, id, fmt.Sprintf("row-%d-%s", id, pad))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitTiered waits until every bucket's leader has deleted local segments
// that remote storage holds, and returns the tables' remote logs.
func waitTiered(t *testing.T, cl *testcluster.Cluster, db, name string, buckets int32) []*pb.RemoteLog {
	t.Helper()
	ctx := guardCtx(t)
	out := make([]*pb.RemoteLog, buckets)
	for b := range buckets {
		for {
			start, err := cl.LocalLogStart(ctx, db, name, b)
			if err != nil && ctx.Err() != nil {
				t.Fatalf("bucket %d: %v", b, err)
			}
			tbl, terr := cl.Table(ctx, db, name)
			if err == nil && terr == nil && start > 0 {
				rl := tbl.Buckets[b].GetRemoteLog()
				if rl == nil || rl.EndOffset < start {
					t.Fatalf("bucket %d: local log starts at %d, remote log %v: a gap", b, start, rl)
				}
				out[b] = rl
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("bucket %d never tiered (local start %d, %v)", b, start, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return out
}

// TestScannerReadsRemoteLog: once a bucket's oldest segments live only in
// remote storage, a scanner from the earliest offset or from a timestamp
// reads across the boundary into local data with no gap and no duplicate.
func TestScannerReadsRemoteLog(t *testing.T) {
	fc, c := startCluster(t)
	const rows = 600
	if _, err := fc.CreateTable(t.Context(), testcluster.TableSpec{Database: fc.db, Name: "tiered", Schema: testSchema,
		Buckets: 2, Replication: 3, Properties: tieredProps}); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(t.Context(), fc.db, "tiered")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	produceTiered(t, tbl, rows)
	remote := waitTiered(t, fc.Cluster, fc.db, "tiered", 2)
	for b, rl := range remote {
		if rl.StartOffset != 0 || rl.Segments == 0 {
			t.Fatalf("bucket %d: remote log %v should hold the start", b, rl)
		}
		if off, err := tbl.ListOffset(guardCtx(t), int32(b), Earliest()); err != nil || off != 0 {
			t.Fatalf("bucket %d: earliest %d, %v; want 0 (the remote start)", b, off, err)
		}
	}
	for _, from := range []StartPosition{Earliest(), AtTimestamp(start.Add(-time.Minute))} {
		s := newScanner(t, tbl, LogScannerOptions{MaxBytes: 16 << 10})
		for b := range int32(2) {
			if err := s.Subscribe(b, from); err != nil {
				t.Fatal(err)
			}
		}
		got := pollUntil(t, s, rows)
		seen := make(map[int64]bool)
		for _, r := range got {
			id := rowID(tbl, r.Row)
			if seen[id] {
				t.Fatalf("%v: row %d twice", from, id)
			}
			seen[id] = true
		}
	}

	// A scanner of one column reads the remote segments cut to it by the
	// leader, which reads them from the store (a folder: nothing to
	// presign), and the local tail cut the same way.
	s := newScanner(t, tbl, LogScannerOptions{MaxBytes: 16 << 10, Columns: []string{"id"}})
	for b := range int32(2) {
		if err := s.Subscribe(b, Earliest()); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[int64]bool)
	for _, r := range pollUntil(t, s, rows) {
		v := record.NewRowView(s.Schema(), r.Row)
		if v.NumColumns() != 1 || seen[v.Int64(0)] {
			t.Fatalf("projected row %x: %d columns, id %d seen before: %v", r.Row, v.NumColumns(), v.Int64(0), seen[v.Int64(0)])
		}
		seen[v.Int64(0)] = true
	}
	if st := s.Stats(); st.Bytes >= rows*200 {
		t.Fatalf("the id column of %d rows took %d bytes", rows, st.Bytes)
	}

	// Dropping the table deletes its remote objects.
	if err := c.Admin().DropTable(t.Context(), fc.db, "tiered"); err != nil {
		t.Fatal(err)
	}
	ctx := guardCtx(t)
	for {
		left := 0
		if err := remoteStore.List(ctx, "", func(o tiering.ObjectInfo) error {
			if strings.Contains(o.Key, fmt.Sprintf("/t%d/", tbl.ID())) {
				left++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d remote objects of the dropped table are still there", left)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestScannerReadsRemoteSegmentsFromS3: with an S3 store the leader hands
// out presigned segment references and the scanner reads them itself
// (gofakes3 always, a real S3 server when the tests have one).
func TestScannerReadsRemoteSegmentsFromS3(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) tiering.S3Config
	}{
		{"gofakes3", func(t *testing.T) tiering.S3Config { return s3test.Fake(t) }},
		{"server", func(t *testing.T) tiering.S3Config { return s3server.Bucket(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := tiering.NewS3(t.Context(), tc.cfg(t))
			if err != nil {
				t.Fatal(err)
			}
			presigned := &countingStore{ObjectStore: store}
			cl, err := testcluster.Start(t.Context(), testcluster.Options{Remote: presigned, TieringInterval: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cl.Close() })
			db := testcluster.NameFor(t.Name())
			if _, err := cl.CreateTable(t.Context(), testcluster.TableSpec{Database: db, Name: "tiered", Schema: testSchema,
				Buckets: 1, Properties: tieredProps}); err != nil {
				t.Fatal(err)
			}
			c, err := Connect(t.Context(), cl.Addrs()...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tbl, err := c.Table(t.Context(), db, "tiered")
			if err != nil {
				t.Fatal(err)
			}
			const rows = 400
			produceTiered(t, tbl, rows)
			waitTiered(t, cl, db, "tiered", 1)
			before := presigned.dataGets.Load()
			s := newScanner(t, tbl, LogScannerOptions{MaxBytes: 16 << 10})
			if err := s.Subscribe(0, Earliest()); err != nil {
				t.Fatal(err)
			}
			got := pollUntil(t, s, rows)
			for i, r := range got {
				if id := rowID(tbl, r.Row); id != int64(i) {
					t.Fatalf("record %d is row %d", i, id)
				}
			}
			if presigned.presigns.Load() == 0 {
				t.Fatal("the leader handed out no presigned segment")
			}
			// The leader reads indexes and manifests itself; the segments'
			// batches come straight from the store to the client.
			if gets := presigned.dataGets.Load() - before; gets != 0 {
				t.Fatalf("the leader read segment data %d times for a client that reads it itself", gets)
			}
		})
	}
}

// countingStore counts the presigned URLs of a store and the gets of
// segment data.
type countingStore struct {
	tiering.ObjectStore
	presigns, dataGets atomic.Int64
}

func (s *countingStore) PresignGet(ctx context.Context, key string, expiry time.Duration) (string, error) {
	s.presigns.Add(1)
	return s.ObjectStore.PresignGet(ctx, key, expiry)
}

func (s *countingStore) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if strings.HasSuffix(key, ".log") {
		s.dataGets.Add(1)
	}
	return s.ObjectStore.Get(ctx, key, offset, length)
}
