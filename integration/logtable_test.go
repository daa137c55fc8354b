package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
)

// logTableSchema is the schema of the fault tests' log table.
const logTableSchema = "id BIGINT NOT NULL, payload STRING"

func createLogTable(t *testing.T, ctx context.Context, cl *client.Client, db, name string, buckets int32) *client.Table {
	t.Helper()
	return createLogTableWith(t, ctx, cl, db, name, buckets, nil)
}

// createLogTableWith is createLogTable with table properties.
func createLogTableWith(t *testing.T, ctx context.Context, cl *client.Client, db, name string, buckets int32, props map[string]string) *client.Table {
	t.Helper()
	if err := cl.Admin().CreateDatabase(ctx, db, client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: logTableSchema,
		Buckets: buckets, Replication: 3, Properties: props}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// encodeRow encodes (id, payload) for logTableSchema.
func encodeRow(t testing.TB, tbl *client.Table, id int64, payload string) []byte {
	enc := tbl.NewRowEncoder()
	enc.SetInt64(0, id)
	enc.SetString(1, payload)
	row, err := enc.Finish(nil)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// noise returns n characters of text drawn from id: base64 of random
// bytes, which compresses to about three quarters, so a log of such rows
// fills segments and takes copy time in the arrow format (zstd) about as
// it does in rows. The same id gives the same text.
func noise(id int64, n int) string {
	rng := rand.New(rand.NewPCG(uint64(id), 0x6e6f697365))
	raw := make([]byte, n*3/4+3)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// scanned is one record read back.
type scanned struct {
	bucket int32
	offset int64
	id     int64
}

// scanAll reads every bucket from the earliest offset up to its high
// watermark, checking offsets rise without gaps.
func scanAll(t *testing.T, ctx context.Context, tbl *client.Table, buckets int32) []scanned {
	t.Helper()
	sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for b := range buckets {
		if err := sc.Subscribe(b, client.Earliest()); err != nil {
			t.Fatal(err)
		}
	}
	schema := tbl.Schema()
	var out []scanned
	next := map[int32]int64{}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := true
		for b := range buckets {
			if hw, ok := sc.HighWatermark(b); !ok || next[b] < hw {
				done = false
			}
		}
		if done {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("scan did not reach the high watermarks: at %v", next)
		}
		recs, err := sc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != next[r.Bucket] {
				t.Fatalf("bucket %d: offset %d after %d", r.Bucket, r.Offset, next[r.Bucket]-1)
			}
			next[r.Bucket] = r.Offset + 1
			out = append(out, scanned{bucket: r.Bucket, offset: r.Offset, id: record.NewRowView(schema, r.Row).Int64(0)})
		}
	}
}

// TestLogTableLeaderKills appends 100k records with acks=all while a bucket
// leader is SIGKILLed and restarted several times. Every acknowledged record
// must be read back exactly once, and every replica must hold the same
// batches up to the high watermark.
func TestLogTableLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	const buckets, total = 3, 100_000
	tbl := createLogTable(t, ctx, cl, "chaos", "events", buckets)
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	acked := map[int64]bool{}
	failed := 0
	var wg sync.WaitGroup
	futures := make(chan struct {
		id  int64
		fut *client.AppendFuture
	}, 4096)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for f := range futures {
			_, err := f.fut.Wait(ctx)
			mu.Lock()
			if err == nil {
				acked[f.id] = true
			} else {
				failed++
			}
			mu.Unlock()
		}
	}()
	// Four phases of 25k appends; in each, once half of the phase is
	// acknowledged, the leader of one bucket is killed, and it is restarted
	// after writes went on without it.
	progress := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) + failed
	}
	writeDone := make(chan struct{})
	phase := make(chan int)
	go func() {
		defer close(writeDone)
		defer close(futures)
		for p := range phase {
			for i := int64(p * total / 4); i < int64((p+1)*total/4); i++ {
				fut, err := w.Append(ctx, encodeRow(t, tbl, i, "p"))
				if err != nil {
					t.Errorf("append %d: %v", i, err)
					return
				}
				futures <- struct {
					id  int64
					fut *client.AppendFuture
				}{i, fut}
			}
		}
	}()
	for round := range 4 {
		phase <- round
		half := round*total/4 + total/8
		waitFor(t, 60*time.Second, "half of the phase acknowledged", func() bool { return progress() >= half })
		if round == 3 {
			break // the last phase runs without a kill, after the restarts
		}
		desc, err := cl.Admin().DescribeTable(ctx, "chaos", "events")
		if err != nil {
			t.Fatal(err)
		}
		leader := desc.Placement[round%buckets].Leader
		nd := c.Nodes[leader-1]
		t.Logf("round %d: SIGKILL node %d (leader of bucket %d) with %d answered", round, leader, round%buckets, progress())
		c.Kill(nd)
		waitFor(t, 60*time.Second, "writes to go on without it", func() bool { return progress() >= half+total/16 })
		c.Restart(nd)
	}
	close(phase)
	<-writeDone
	if err := w.Flush(ctx); err != nil {
		t.Logf("flush: %v", err)
	}
	wg.Wait()
	w.Close(ctx)
	mu.Lock()
	t.Logf("%d acknowledged, %d failed", len(acked), failed)
	mu.Unlock()

	// Every node back in every ISR before reading and comparing.
	waitISRFull(t, ctx, cl, "chaos", "events")
	waitHWSettled(t, ctx, cl, "chaos", "events")
	records := scanAll(t, ctx, tbl, buckets)
	seen := map[int64]int{}
	for _, r := range records {
		seen[r.id]++
	}
	for id, n := range seen {
		if n > 1 {
			t.Fatalf("record %d read %d times", id, n)
		}
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Fatalf("acknowledged record %d read %d times", id, seen[id])
		}
	}
	compareReplicas(t, c, tbl, buckets)
}

// waitISRFull waits until every bucket of the table has all its replicas in
// the ISR.
func waitISRFull(t *testing.T, ctx context.Context, cl *client.Client, db, name string) {
	t.Helper()
	waitFor(t, 60*time.Second, "every replica back in the ISR", func() bool {
		desc, err := cl.Admin().DescribeTable(ctx, db, name)
		if err != nil {
			return false
		}
		for _, b := range desc.Placement {
			if len(b.ISR) != len(b.Replicas) || b.Leader == 0 {
				return false
			}
		}
		return true
	})
}

// waitHWSettled waits until the table's high watermarks stop moving (no
// writes are in flight and followers of new epochs have fetched), so a scan
// to them sees everything written.
func waitHWSettled(t *testing.T, ctx context.Context, cl *client.Client, db, name string) {
	t.Helper()
	var last []int64
	var since time.Time
	waitFor(t, 60*time.Second, "high watermarks to settle", func() bool {
		ends, err := cl.Admin().ListOffsets(ctx, db, name, client.Latest())
		if err != nil || !slices.Equal(ends, last) {
			last, since = ends, time.Now()
			return false
		}
		return time.Since(since) >= 300*time.Millisecond
	})
}

// readReplicaLog reads every batch of the replica log in dir (its node
// stopped), and where the log ends.
func readReplicaLog(t *testing.T, dir string) (batches []string, end int64) {
	t.Helper()
	l, err := logstore.Open(logstore.Config{Dir: dir})
	if err != nil {
		t.Fatalf("open replica %s: %v", dir, err)
	}
	defer l.Close()
	for from := l.StartOffset(); from < l.EndOffset(); {
		recs, err := l.Read(from, 1<<20)
		if err != nil {
			t.Fatalf("read replica %s at %d: %v", dir, from, err)
		}
		it := recs.Batches()
		for it.Next() {
			batches = append(batches, string(it.Batch()))
		}
		from = recs.NextOffset
		recs.Release()
	}
	return batches, l.EndOffset()
}

// compareReplicas stops the cluster and checks that the replicas of every
// bucket, all in the ISR and caught up, end at the same offset and hold
// byte-identical batches.
func compareReplicas(t *testing.T, c *Cluster, tbl *client.Table, buckets int32) {
	t.Helper()
	for _, nd := range c.Nodes {
		c.Stop(nd)
	}
	for b := range buckets {
		var logs [][]string
		var ends []int64
		for _, nd := range c.Nodes {
			batches, end := readReplicaLog(t, filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b%d", tbl.ID(), b)))
			ends = append(ends, end)
			logs = append(logs, batches)
		}
		n := slices.Min([]int{len(logs[0]), len(logs[1]), len(logs[2])})
		for i := 1; i < 3; i++ {
			if !slices.Equal(logs[0][:n], logs[i][:n]) {
				t.Fatalf("bucket %d: replica on node %d differs from node 1 within the common prefix", b, i+1)
			}
		}
		if ends[0] != ends[1] || ends[0] != ends[2] {
			t.Fatalf("bucket %d: replicas end at %v after catching up: a divergent tail was not truncated", b, ends)
		}
		t.Logf("bucket %d: replicas identical over %d batches (ends %v)", b, n, ends)
	}
}
