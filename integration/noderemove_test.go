package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// removeStatus is `floe cluster status -o json` as the removal test reads it.
type removeStatus struct {
	Ready          bool                  `json:"ready"`
	NotReadyReason string                `json:"not_ready_reason"`
	Voters         []client.Voter        `json:"voters"`
	Nodes          []client.Node         `json:"nodes"`
	Buckets        []client.BucketStatus `json:"buckets"`
}

// TestNodeRemove (issue 31, point 6): node 3 of three is killed for good.
// The cluster stays "not ready" waiting for it until `floe node remove 3`:
// refused while the node is alive, and while it holds the only in-sync
// copy of a bucket (named); once that table is dropped, the removal
// forgets the node (registration, metadata voter, replicas), readiness no
// longer waits for it, cluster status lists it nowhere, the RF 3 table's
// buckets report under-replicated, and acks=all writes still succeed with
// the two replicas left (min.insync.replicas 2). A wiped node 3 may then
// join again as a new node.
func TestNodeRemove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and kills one node")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	c.MustCLI("db", "create", "db")
	c.MustCLI("table", "create", "db.t", "--schema", "id BIGINT NOT NULL", "--buckets", "2", "--replication", "3",
		"--property", "min.insync.replicas=2")
	// One bucket per node, each its only copy: one is node 3's.
	c.MustCLI("table", "create", "db.solo", "--schema", "id BIGINT NOT NULL", "--buckets", "3", "--replication", "1")
	rows := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "{\"id\":%d}\n", i)
		}
		return b.String()
	}
	if _, errOut, code := c.CLIInput(rows(0, 50), "produce", "db.t", "--acks", "all"); code != 0 {
		t.Fatalf("produce before the kill: exit %d: %s", code, errOut)
	}
	status := func() removeStatus {
		var st removeStatus
		c.CLIJSON(&st, "cluster", "status")
		return st
	}
	node3, _ := registeredNode(c, 3)
	if !node3.Alive {
		t.Fatal("node 3 is not alive before the kill")
	}
	if _, errOut, code := c.CLI("node", "remove", "3"); code != 1 || !strings.Contains(errOut, "node 3: it is alive") {
		t.Fatalf("node remove of a live node: exit %d: %s", code, errOut)
	}

	c.Kill(c.Nodes[2])
	waitFor(t, 30*time.Second, "node 3 seen dead", func() bool {
		n, ok := registeredNode(c, 3)
		return ok && !n.Alive
	})
	if st := status(); st.Ready || !strings.Contains(st.NotReadyReason, "tablet nodes not live: 3") {
		t.Fatalf("status with node 3 dead: ready %v, %q", st.Ready, st.NotReadyReason)
	}

	_, errOut, code := c.CLI("node", "remove", "3")
	if code != 1 || !strings.Contains(errOut, "node 3 holds the only in-sync copy of 1 bucket (db.solo bucket ") ||
		!strings.Contains(errOut, "would lose") {
		t.Fatalf("node remove with the only copy of a bucket: exit %d: %s", code, errOut)
	}
	if _, ok := registeredNode(c, 3); !ok {
		t.Fatal("a refused removal forgot node 3")
	}
	c.MustCLI("table", "drop", "db.solo")

	out := c.MustCLI("node", "remove", "3")
	for _, want := range []string{"node 3 removed: its registration, its metadata Raft membership, 2 replicas",
		"db.t bucket 0: replicas ", "of replication 3", "under-replicated", "2 buckets under-replicated", "the controller places new replicas"} {
		if !strings.Contains(out, want) {
			t.Fatalf("node remove printed no %q:\n%s", want, out)
		}
	}

	if _, errOut, code := c.CLI("cluster", "status", "--wait", "30s"); code != 0 {
		t.Fatalf("cluster status --wait after the removal: exit %d: %s", code, errOut)
	}
	st := status()
	if !st.Ready || slices.ContainsFunc(st.Nodes, func(n client.Node) bool { return n.ID == 3 }) ||
		slices.ContainsFunc(st.Voters, func(v client.Voter) bool { return v.ID == 3 }) {
		t.Fatalf("status after the removal lists node 3 or is not ready: %+v", st)
	}
	for _, b := range st.Buckets {
		if b.Table != "t" {
			continue
		}
		if slices.Contains(b.Replicas, 3) || slices.Contains(b.ISR, 3) || b.Leader == 0 || b.Leader == 3 || !b.UnderReplicated {
			t.Fatalf("bucket after the removal: %+v", b)
		}
	}
	if _, errOut, code := c.CLIInput(rows(50, 100), "produce", "db.t", "--acks", "all"); code != 0 {
		t.Fatalf("acks=all produce after the removal: exit %d: %s", code, errOut)
	}
	if _, errOut, code := c.CLI("node", "remove", "3"); code != 1 || !strings.Contains(errOut, "unknown node") {
		t.Fatalf("a second removal: exit %d: %s", code, errOut)
	}

	// A wiped node 3 joins again as a new node, with no replicas.
	c.Wipe(c.Nodes[2])
	c.Restart(c.Nodes[2])
	waitFor(t, 60*time.Second, "a wiped node 3 registered and alive", func() bool {
		n, ok := registeredNode(c, 3)
		return ok && n.Alive
	})
	if _, errOut, code := c.CLI("cluster", "status", "--wait", "30s"); code != 0 {
		t.Fatalf("cluster status --wait after node 3 rejoined: exit %d: %s", code, errOut)
	}
}
