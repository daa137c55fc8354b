package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// TestTableElect drives `floe table elect` against a real cluster: refusals
// are typed, and a clean election moves leadership back to the preferred
// replica once it is in sync again after a restart.
func TestTableElect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	mustCLI := c.MustCLI
	mustCLI("db", "create", "db")
	mustCLI("table", "create", "db.t", "--schema", "id BIGINT NOT NULL", "--buckets", "1", "--replication", "3")

	describe := func() placedBucket { return describeBucket(c, "db.t") }
	b := describe()
	if b.Status != "online" || b.Leader != b.Replicas[0] || len(b.ISR) != 3 {
		t.Fatalf("new bucket: %+v", b)
	}

	if out, errOut, code := c.CLI("table", "elect", "db.t"); code != 0 || !strings.HasPrefix(out, "nothing to do: ") {
		t.Fatalf("floe table elect db.t with every bucket led by its preferred replica: exit %d, %q %q; want exit 0, nothing to do",
			code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "elect", "db.t", "--bucket", "3"}, "no bucket 3"},
		{[]string{"table", "elect", "db.nope", "--unclean"}, "unknown table"},
	} {
		if _, errOut, code := c.CLI(tc.args...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Fatalf("floe %s: exit %d, %q; want exit 1 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}

	preferred := c.Nodes[b.Replicas[0]-1]
	c.Stop(preferred)
	waitFor(t, 30*time.Second, "leadership to move", func() bool {
		b = describe()
		return b.Leader != 0 && b.Leader != preferred.ID
	})
	c.Restart(preferred)
	// An election picks among replicas the controller sees alive in
	// gossip, which may lag the replica's return to the ISR.
	waitFor(t, 60*time.Second, "the restarted replica back in the ISR and alive", func() bool {
		b = describe()
		if !slices.Contains(b.ISR, preferred.ID) {
			return false
		}
		n, ok := registeredNode(c, preferred.ID)
		return ok && n.Alive
	})
	// The node answering the CLI may see the restarted replica alive
	// before the controller does: until then the election keeps the
	// current leader ("nothing to do: ... already led by ..."), and is
	// asked again.
	var out string
	waitFor(t, 30*time.Second, "an election to pick the preferred replica", func() bool {
		o, errOut, code := c.CLI("table", "elect", "db.t", "--bucket", "0")
		if code != 0 {
			t.Fatalf("floe table elect db.t --bucket 0: exit %d: %s", code, errOut)
		}
		out = o
		return !strings.HasPrefix(o, "nothing to do: ")
	})
	after := describe()
	if after.Leader != preferred.ID || after.LeaderEpoch <= b.LeaderEpoch || after.UncleanElections != 0 ||
		out != fmt.Sprintf("bucket 0: leader %d, epoch %d\n", preferred.ID, after.LeaderEpoch) {
		t.Fatalf("elect printed %q; bucket %+v (before %+v)", out, after, b)
	}
}

// TestWipedOnlyReplicaStaysOffline (issue 11, bug 1): the only in-sync
// replica of a bucket comes back with its folder wiped. It must not lead
// again with an empty log as if nothing happened: its new registration
// takes it out of the ISR, the bucket is offline with no in-sync replica,
// writes fail, and only `floe table elect --unclean` (counted) brings it
// back, with what the wiped disk held lost.
func TestWipedOnlyReplicaStaysOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	c.MustCLI("db", "create", "db")
	c.MustCLI("table", "create", "db.w", "--schema", "id BIGINT NOT NULL", "--buckets", "1", "--replication", "1")
	describe := func() placedBucket { return describeBucket(c, "db.w") }
	var b placedBucket
	waitFor(t, 30*time.Second, "the bucket to be served", func() bool {
		b = describe()
		_, _, code := c.CLIInput(`{"id":1}`+"\n"+`{"id":2}`+"\n", "produce", "db.w")
		return code == 0
	})
	only := c.Nodes[b.Replicas[0]-1]
	nodeEpoch := func() uint64 {
		if n, ok := registeredNode(c, only.ID); ok && n.Alive {
			return n.NodeEpoch
		}
		return 0
	}
	before := nodeEpoch()

	c.Kill(only)
	c.Wipe(only)
	c.Restart(only)
	waitFor(t, 60*time.Second, "the wiped node to register again", func() bool { return nodeEpoch() > before })
	b = describe()
	if b.Status != "offline: no in-sync replica" || b.Leader != 0 || len(b.ISR) != 0 {
		t.Fatalf("bucket after its only replica came back wiped: %+v; want offline with an empty ISR", b)
	}
	if _, errOut, code := c.CLIInput(`{"id":3}`+"\n", "produce", "db.w", "--timeout", "3s"); code == 0 {
		t.Fatal("a write to a bucket with no in-sync replica succeeded")
	} else {
		t.Logf("produce refused as it should be: %q", errOut)
		if !strings.Contains(errOut, "floe table elect --unclean") {
			t.Fatalf("the refusal does not say how the bucket comes back: %q", errOut)
		}
		// Every attempt was answered (bucket offline): not written, and
		// not of unknown outcome.
		if !strings.Contains(errOut, "1 row read: 0 rows acknowledged, 0 rows with unknown outcome") ||
			!strings.Contains(errOut, "1 row not written") {
			t.Fatalf("the produce summary does not count the acknowledged rows: %q", errOut)
		}
	}

	c.MustCLI("table", "elect", "db.w", "--unclean")
	b = describe()
	if b.Status != "online" || b.Leader != only.ID || b.UncleanElections != 1 {
		t.Fatalf("bucket after an unclean election: %+v", b)
	}
	waitFor(t, 30*time.Second, "a write after the unclean election", func() bool {
		_, _, code := c.CLIInput(`{"id":4}`+"\n", "produce", "db.w")
		return code == 0
	})
	out := c.MustCLI("consume", "db.w", "--output", "json")
	if rows := strings.Count(out, `"id"`); rows != 1 || !strings.Contains(out, `"id":4`) {
		t.Fatalf("rows after the unclean election: %q; want only the row written after it", out)
	}
}

// statusNode is a registered node as `floe cluster status` shows it.
type statusNode struct {
	ID        uint32 `json:"id"`
	NodeEpoch uint64 `json:"node_epoch"`
	Alive     bool   `json:"alive"`
}

// registeredNode returns node id as `floe cluster status` shows it.
func registeredNode(c *Cluster, id uint32) (statusNode, bool) {
	var st struct {
		Nodes []statusNode `json:"nodes"`
	}
	c.CLIJSON(&st, "cluster", "status")
	for _, n := range st.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return statusNode{}, false
}

// placedBucket is a table's bucket 0 as `floe table describe` shows it.
type placedBucket struct {
	Replicas         []uint32 `json:"replicas"`
	Leader           uint32   `json:"leader"`
	LeaderEpoch      int32    `json:"leader_epoch"`
	ISR              []uint32 `json:"isr"`
	Status           string   `json:"status"`
	UncleanElections int32    `json:"unclean_elections"`
}

// describeBucket returns bucket 0 of table (DB.TABLE) as `floe table
// describe` shows it.
func describeBucket(c *Cluster, table string) placedBucket {
	var desc struct {
		Placement []placedBucket `json:"placement"`
	}
	c.CLIJSON(&desc, "table", "describe", table)
	return desc.Placement[0]
}

// TestUncleanElectionPrefersLongestLog (rule "damage and the last copy"
// 2): the replica first in assignment order holds less than another live
// replica when the bucket goes offline; an unclean election must make the
// one that holds more the leader, and its records stay readable. One meta
// node and three tablet nodes, so stopping two replicas never costs the
// metadata its quorum.
//
// Replicas A, B, C in assignment order. A is stopped after the first
// records; B leads and takes more with C; B is paused, so C leads alone
// and takes a few with acks=1; C is killed: offline, ISR {C}. A restarts
// and B resumes, both out of the ISR: A holds the first records of an
// older epoch, B those and more of a newer one.
func TestUncleanElectionPrefersLongestLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of 4 nodes")
	}
	c := StartCluster(t, 1, ClusterOptions{Roles: "meta"})
	for range 3 {
		c.AddNode("tablet")
	}
	c.WaitRegistered(60 * time.Second)
	ctx := t.Context()
	cl := c.Client(ctx)
	tbl := createLogTable(t, ctx, cl, "db", "u", 1)
	describe := func() placedBucket { return describeBucket(c, "db.u") }
	b := describe()
	a, bNode, cNode := c.Nodes[b.Replicas[0]-1], c.Nodes[b.Replicas[1]-1], c.Nodes[b.Replicas[2]-1]
	appendAcked(t, ctx, tbl, 0, 100)

	c.Stop(a)
	waitFor(t, 60*time.Second, "B to lead without A", func() bool {
		b = describe()
		return b.Leader == bNode.ID && !slices.Contains(b.ISR, a.ID)
	})
	appendAcked(t, ctx, tbl, 100, 300) // acks=all: B and C

	c.Pause(bNode)
	waitFor(t, 60*time.Second, "C to lead alone", func() bool {
		b = describe()
		return b.Leader == cNode.ID && slices.Equal(b.ISR, []uint32{cNode.ID})
	})
	waitFor(t, 30*time.Second, "a write only C holds", func() bool {
		_, _, code := c.CLIInput(`{"id":1000,"payload":"c"}`+"\n", "produce", "db.u", "--acks", "1")
		return code == 0
	})
	c.Kill(cNode)
	waitFor(t, 60*time.Second, "the bucket offline", func() bool {
		b = describe()
		return b.Leader == 0
	})
	if !slices.Equal(b.ISR, []uint32{cNode.ID}) {
		t.Fatalf("offline bucket %+v; want ISR [%d]", b, cNode.ID)
	}

	c.Resume(bNode)
	c.Restart(a)
	// The election elects among the nodes the controller (the only meta
	// node, which answers cluster status too) sees alive.
	waitFor(t, 60*time.Second, "A and B alive", func() bool {
		na, okA := registeredNode(c, a.ID)
		nb, okB := registeredNode(c, bNode.ID)
		return okA && okB && na.Alive && nb.Alive
	})
	out := c.MustCLI("table", "elect", "db.u", "--unclean")
	after := describe()
	t.Logf("floe table elect --unclean: %s", out)
	if after.Leader != bNode.ID || after.UncleanElections != 1 {
		t.Fatalf("after the unclean election %+v; want node %d (B, the longer log of the newer epoch) to lead", after, bNode.ID)
	}
	wantWhy := fmt.Sprintf("chosen by log: node %d: log ends at 300 in epoch ", bNode.ID)
	if !strings.Contains(out, wantWhy) || !strings.Contains(out, fmt.Sprintf("; node %d: 100 in epoch ", a.ID)) {
		t.Fatalf("floe table elect printed %q; want it to say B's log ends at 300 and A's at 100", out)
	}

	waitFor(t, 30*time.Second, "the high watermark at B's end", func() bool {
		ends, err := cl.Admin().ListOffsets(ctx, "db", "u", client.Latest())
		return err == nil && ends[0] == 300
	})
	seen := map[int64]int{}
	for _, r := range scanAll(t, ctx, tbl, 1) {
		seen[r.id]++
	}
	for id := range int64(300) {
		if seen[id] != 1 {
			t.Fatalf("record %d read %d times after the unclean election", id, seen[id])
		}
	}
	if len(seen) != 300 {
		t.Fatalf("%d distinct records read, want the 300 B held (C's acks=1 write was lost with C)", len(seen))
	}
}
