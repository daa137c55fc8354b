package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/testkit/s3test"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
)

// lakeOutage is how long TestLakeStoreOutage keeps the object store
// unreachable: the minute with -lake-outage=1m.
var lakeOutage = flag.Duration("lake-outage", 15*time.Second, "how long TestLakeStoreOutage keeps the object store unreachable")

// s3server is the S3 server the package's tests share (versitygw, or the
// one FLOE_TEST_S3_ENDPOINT names).
var s3server s3test.Server

// blackHole forwards TCP connections to an address until it is cut off:
// then it drops the connections it forwards and holds new ones open
// without an answer, as a network that lost the server does, until it is
// restored.
type blackHole struct {
	ln     net.Listener
	target string
	down   atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newBlackHole(t *testing.T, target string) *blackHole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &blackHole{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		ln.Close()
		h.closeAll()
	})
	go h.serve()
	return h
}

func (h *blackHole) addr() string { return h.ln.Addr().String() }

func (h *blackHole) serve() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.track(c)
		if h.down.Load() {
			continue // held, unanswered, until restore closes it
		}
		go h.forward(c)
	}
}

func (h *blackHole) forward(c net.Conn) {
	s, err := net.Dial("tcp", h.target)
	if err != nil {
		c.Close()
		return
	}
	h.track(s)
	go func() {
		io.Copy(s, c)
		s.Close()
	}()
	io.Copy(c, s)
	c.Close()
}

func (h *blackHole) track(c net.Conn) {
	h.mu.Lock()
	h.conns[c] = true
	h.mu.Unlock()
}

func (h *blackHole) closeAll() {
	h.mu.Lock()
	conns := h.conns
	h.conns = map[net.Conn]bool{}
	h.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// cut makes the server unreachable; restore brings it back, closing the
// connections held meanwhile.
func (h *blackHole) cut() {
	h.down.Store(true)
	h.closeAll()
}

func (h *blackHole) restore() {
	h.down.Store(false)
	h.closeAll()
}

// TestLakeStoreOutage: the object store the lake lives in becomes
// unreachable (connections to it hang) for -lake-outage while a
// lake-enabled table takes writes: every write is acknowledged as usual,
// the lake stays where it was (no round commits without its files), and
// once the store is back the lake catches up and holds every record once.
func TestLakeStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster on S3 and cuts S3 off")
	}
	cfg := s3server.Bucket(t)
	hole := newBlackHole(t, cfg.Endpoint)
	secret := filepath.Join(t.TempDir(), "s3-secret")
	if err := os.WriteFile(secret, []byte(cfg.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--s3-endpoint", hole.addr(), "--s3-bucket", cfg.Bucket,
		"--s3-region", cfg.Region, "--s3-path-style", "--s3-access-key", cfg.AccessKey, "--s3-secret-key-file", secret,
		"--tiering-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	const db, name, buckets = "outage", "events", 2
	if err := cl.Admin().CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: logTableSchema, Buckets: buckets,
		Replication: 3, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	direct := cfg
	store, err := tiering.NewS3(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	lt := lake.NewTable(store, fmt.Sprintf("lake/%s/%s-%d", db, name, tbl.TableID()))
	lakeOffsets := func() (sum int64, ok bool) {
		resp, err := lakeState(ctx, c, pool, db, name)
		if err != nil {
			return 0, false
		}
		for _, b := range resp.GetBuckets() {
			sum += b.GetLakeOffset()
		}
		return sum, true
	}
	ends := func() (sum int64) {
		for b := range int32(buckets) {
			hw, err := tbl.ListOffset(ctx, b, client.Latest())
			if err != nil {
				t.Fatal(err)
			}
			sum += hw
		}
		return sum
	}
	write := func(from, to int64) {
		t.Helper()
		w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(context.WithoutCancel(ctx))
		for i := from; i < to; i++ {
			if _, err := w.Append(ctx, encodeRow(t, tbl, i, noise(i, 100))); err != nil {
				t.Fatal(err)
			}
		}
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := w.Flush(fctx); err != nil {
			t.Fatalf("writes %d to %d during the outage: %v", from, to, err)
		}
	}

	write(0, 2000)
	waitFor(t, 60*time.Second, "the lake to hold the first records", func() bool {
		sum, ok := lakeOffsets()
		return ok && sum == ends()
	})
	before, _ := lakeOffsets()
	t.Logf("cutting the object store off for %s; the lake holds %d records", *lakeOutage, before)
	hole.cut()
	outageEnd := time.Now().Add(*lakeOutage)
	for i := int64(2000); time.Now().Before(outageEnd); i += 500 {
		start := time.Now()
		write(i, i+500) // acknowledged, the store unreachable
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("500 writes took %s with the object store unreachable", took)
		}
		if sum, ok := lakeOffsets(); ok && sum != before {
			t.Fatalf("the lake moved from %d to %d records with its store unreachable", before, sum)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	hole.restore()
	total := ends()
	t.Logf("the object store is back; the logs hold %d records", total)
	waitFor(t, 120*time.Second, "the lake to catch up once the store is back, and its version to be published", func() bool {
		sum, ok := lakeOffsets()
		if !ok || sum != total {
			return false
		}
		// The version readable by path (a commit's publish may fail with
		// the store just back; the next round publishes it).
		published, err := lakeRecords(ctx, lt, tbl.TableID(), buckets)
		if err != nil {
			return false
		}
		var n int64
		for _, o := range published {
			n += o
		}
		return n == total
	})
	seen := map[[2]int64]int{}
	for _, r := range lakeRowsSeen(t, ctx, store, lt) {
		seen[[2]int64{int64(r.bucket), r.offset}]++
	}
	if int64(len(seen)) != total {
		t.Fatalf("the lake holds %d offsets, the logs %d", len(seen), total)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("bucket %d offset %d is in the lake %d times", k[0], k[1], n)
		}
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
