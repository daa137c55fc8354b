package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// drainStatus is what these tests read of `floe cluster status -o json`.
type drainStatus struct {
	Leader  uint32                `json:"leader"`
	Nodes   []client.Node         `json:"nodes"`
	Buckets []client.BucketStatus `json:"buckets"`
}

func clusterStatusJSON(c *Cluster) drainStatus {
	c.t.Helper()
	var st drainStatus
	c.CLIJSON(&st, "cluster", "status")
	return st
}

// ledBy lists the buckets a node leads, as "db.table/bucket".
func (st drainStatus) ledBy(id uint32) []string {
	var out []string
	for _, b := range st.Buckets {
		if b.Leader == id {
			out = append(out, fmt.Sprintf("%s.%s/%d", b.Database, b.Table, b.Bucket))
		}
	}
	return out
}

func (st drainStatus) node(id uint32) (client.Node, bool) {
	for _, n := range st.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return client.Node{}, false
}

// TestDrainThenStop is a planned stop of a tablet node: `floe node drain`
// moves every leadership it holds to another in-sync replica, so when the
// node then stops, acks=all writes go on without waiting for a failover;
// every acknowledged row reads back once. The restarted node registers
// again, which clears its draining mark.
func TestDrainThenStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	c.MustCLI("db", "create", "db")
	c.MustCLI("table", "create", "db.t", "--schema", "id BIGINT NOT NULL", "--buckets", "6", "--replication", "3")

	// Drain a node that leads buckets but not the metadata: stopping the
	// metadata leader pauses the controller for an election, which is not
	// what this test is about.
	st := clusterStatusJSON(c)
	var drained *Node
	for _, nd := range c.Nodes {
		if nd.ID != st.Leader && len(st.ledBy(nd.ID)) > 0 {
			drained = nd
			break
		}
	}
	if drained == nil {
		t.Fatalf("no node other than the metadata leader %d leads a bucket: %+v", st.Leader, st.Buckets)
	}
	id := strconv.Itoa(int(drained.ID))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.Client(ctx)
	tbl, err := cl.Table(ctx, "db", "t")
	if err != nil {
		t.Fatal(err)
	}
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	var (
		mu      sync.Mutex
		acked   []int64
		slowest time.Duration
		failed  error
	)
	// writeOne appends one row and waits for its acknowledgement, which
	// must come within 5 s.
	writeOne := func(id int64) error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		f, err := w.AppendJSON(wctx, fmt.Appendf(nil, `{"id":%d}`, id))
		if err == nil {
			_, err = f.Wait(wctx)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed = fmt.Errorf("row %d: %w", id, err)
			return err
		}
		acked = append(acked, id)
		slowest = max(slowest, time.Since(start))
		return nil
	}
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		if failed != nil {
			t.Fatalf("acks=all write failed: %v", failed)
		}
		return len(acked)
	}
	for i := range int64(50) {
		if err := writeOne(i); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := c.CLI("node", "drain", id)
	if code != 0 || strings.Contains(out, "not moved") || !strings.Contains(out, "node "+id+" is draining: ") {
		t.Fatalf("floe node drain %s: exit %d\n%s%s", id, code, out, errOut)
	}
	t.Logf("floe node drain %s:\n%s", id, out)
	st = clusterStatusJSON(c)
	if led := st.ledBy(drained.ID); len(led) > 0 {
		t.Fatalf("after the drain node %s still leads %v", id, led)
	}
	if n, _ := st.node(drained.ID); !n.Draining {
		t.Fatalf("cluster status does not show node %s draining: %+v", id, n)
	}

	// Writes run while the node stops.
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := int64(50); ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := writeOne(i); err != nil {
				done <- err
				return
			}
		}
	}()
	waitFor(t, 30*time.Second, "writes before the stop", func() bool { return ackedCount() >= 80 })
	c.Stop(drained)
	stoppedAt := ackedCount()
	waitFor(t, 30*time.Second, "writes after the stop", func() bool { return ackedCount() >= stoppedAt+100 })
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("%d rows acknowledged, %d after the stop; slowest acknowledgement %v", len(acked), len(acked)-stoppedAt, slowest)
	mu.Unlock()

	st = clusterStatusJSON(c)
	for _, b := range st.Buckets {
		if b.Offline || b.Leader == drained.ID {
			t.Fatalf("bucket %d after the stop: %+v", b.Bucket, b)
		}
	}

	c.Restart(drained)
	waitFor(t, 60*time.Second, "the node to register again, no longer draining", func() bool {
		var st drainStatus
		out, _, code := c.CLI("cluster", "status", "-o", "json")
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			return false
		}
		n, ok := st.node(drained.ID)
		return ok && n.Alive && !n.Draining
	})

	checkReadOnce(t, c.MustCLI("consume", "db.t", "--no-meta"), acked)
}

// checkReadOnce checks that each of ids is in out (the JSON lines of `floe
// consume --no-meta` of rows with an id column) exactly once.
func checkReadOnce(t *testing.T, out string, ids []int64) {
	t.Helper()
	seen := map[int64]int{}
	for line := range strings.Lines(out) {
		var row struct{ ID int64 }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("consume line %q: %v", line, err)
		}
		seen[row.ID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Fatalf("acknowledged row %d read back %d times", id, seen[id])
		}
	}
}
