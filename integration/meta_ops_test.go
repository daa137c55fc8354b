package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// TestMetaCLI drives the catalog through the floe binary: JSON documents,
// DDL validation errors (each a clear message, exit status 1, nothing
// changed), and a restart of every node keeping the catalog.
func TestMetaCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	mustCLI := c.MustCLI
	mustCLI("db", "create", "shop")
	mustCLI("db", "create", "shop", "--if-not-exists")
	mustCLI("table", "create", "shop.orders", "--schema", "id BIGINT NOT NULL, item STRING, amount DECIMAL(10,2)",
		"--primary-key", "id", "--buckets", "6", "--replication", "3", "--property", "merge-engine=first_row")
	mustCLI("table", "create", "shop.events", "--schema", "ts TIMESTAMP(3), body STRING")

	var desc struct {
		Name    string `json:"name"`
		Columns []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Nullable bool   `json:"nullable"`
		} `json:"columns"`
		PrimaryKey  []string          `json:"primary_key"`
		BucketKey   []string          `json:"bucket_key"`
		Buckets     int               `json:"buckets"`
		Replication int               `json:"replication"`
		Properties  map[string]string `json:"properties"`
		Placement   []struct {
			Replicas []uint32 `json:"replicas"`
		} `json:"placement"`
	}
	c.CLIJSON(&desc, "table", "describe", "shop.orders")
	if desc.Name != "orders" || len(desc.Columns) != 3 || desc.Columns[2].Type != "DECIMAL(10,2)" || desc.Columns[0].Nullable ||
		!slices.Equal(desc.PrimaryKey, []string{"id"}) || !slices.Equal(desc.BucketKey, []string{"id"}) ||
		desc.Buckets != 6 || desc.Replication != 3 || desc.Properties["merge-engine"] != "first_row" || len(desc.Placement) != 6 {
		t.Fatalf("describe: %+v", desc)
	}
	perNode := map[uint32]int{}
	for _, b := range desc.Placement {
		for _, r := range b.Replicas {
			perNode[r]++
		}
	}
	if len(perNode) != 3 || perNode[1] != 6 || perNode[2] != 6 || perNode[3] != 6 {
		t.Fatalf("replicas not spread over the 3 nodes: %v", perNode)
	}

	var dbs []map[string]any
	c.CLIJSON(&dbs, "db", "list")
	if len(dbs) != 1 || dbs[0]["name"] != "shop" {
		t.Fatalf("db list: %v", dbs)
	}
	var tables []map[string]any
	c.CLIJSON(&tables, "table", "list", "shop")
	if len(tables) != 2 || tables[0]["name"] != "events" || tables[1]["name"] != "orders" {
		t.Fatalf("table list: %v", tables)
	}
	var status struct {
		Leader any    `json:"leader"`
		Term   uint64 `json:"term"`
		Voters []struct {
			ID      uint32 `json:"id"`
			Address string `json:"address"`
			State   string `json:"state"`
		} `json:"voters"`
		Nodes []struct {
			ID      uint32   `json:"id"`
			Roles   []string `json:"roles"`
			Address string   `json:"address"`
			Alive   bool     `json:"alive"`
		} `json:"nodes"`
	}
	c.CLIJSON(&status, "cluster", "status")
	leaders := 0
	for _, v := range status.Voters {
		if v.State == "leader" {
			leaders++
		}
	}
	if status.Leader == "" || status.Term == 0 || len(status.Voters) != 3 || leaders != 1 || len(status.Nodes) != 3 {
		t.Fatalf("cluster status: %+v", status)
	}
	for _, n := range status.Nodes {
		if !n.Alive || len(n.Roles) != 2 || n.Address == "" {
			t.Fatalf("node in status: %+v", n)
		}
	}

	// DDL validation: each refused with a message naming the problem.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"db", "create", "shop"}, "exists"},
		{[]string{"db", "create", "bad-name"}, "bad-name"},
		{[]string{"db", "create", strings.Repeat("x", 201)}, "name"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT, id STRING"}, "duplicate"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINTEGER"}, "BIGINTEGER"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT, v STRING", "--primary-key", "id"}, "NOT NULL"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT NOT NULL", "--primary-key", "nope"}, "nope"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT NOT NULL, v INT NOT NULL", "--primary-key", "id", "--bucket-key", "v"}, "bucket key"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT", "--buckets", "0"}, ""},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT", "--buckets", "5000"}, "4096"},
		{[]string{"table", "create", "shop.t1", "--schema", "id BIGINT", "--replication", "4"}, "replication"},
		{[]string{"table", "create", "nodb.t1", "--schema", "id BIGINT"}, "nodb"},
		{[]string{"table", "create", "shop.orders", "--schema", "id BIGINT"}, "exists"},
		{[]string{"table", "describe", "shop.nope"}, "nope"},
		{[]string{"db", "drop", "shop"}, "table"},
	} {
		if tc.want == "" {
			continue // --buckets 0 means the default: valid
		}
		_, errOut, code := c.CLI(tc.args...)
		if code == 0 || !strings.Contains(strings.ToLower(errOut), strings.ToLower(tc.want)) {
			t.Errorf("floe %s: exit %d, stderr %q; want an error mentioning %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	c.CLIJSON(&tables, "table", "list", "shop")
	if len(tables) != 2 {
		t.Fatalf("refused DDL changed the catalog: %v", tables)
	}

	// All nodes restarted together keep the catalog.
	for _, nd := range c.Nodes {
		c.Kill(nd)
	}
	for _, nd := range c.Nodes {
		c.Restart(nd)
	}
	c.WaitLeader(30 * time.Second)
	c.CLIJSON(&tables, "table", "list", "shop")
	if len(tables) != 2 {
		t.Fatalf("after restarting every node: %v", tables)
	}
	mustCLI("db", "drop", "shop", "--cascade")
	c.CLIJSON(&dbs, "db", "list")
	if len(dbs) != 0 {
		t.Fatalf("after cascade drop: %v", dbs)
	}
}

// TestMetaSnapshotInstall: with a tiny snapshot threshold, a voter that was
// down while the log moved on catches up from a snapshot, and every node
// restarts from its snapshots and state file with the catalog intact.
func TestMetaSnapshotInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--raft-snapshot-threshold", "16", "--raft-trailing-logs", "4", "--raft-snapshot-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	leader := c.WaitLeader(10 * time.Second)
	var follower *Node
	for _, nd := range c.Nodes {
		if nd != leader {
			follower = nd
			break
		}
	}
	c.Kill(follower)
	var want []client.Database
	for i := range 200 {
		name := fmt.Sprintf("snap%03d", i)
		if err := cl.Admin().CreateDatabase(ctx, name); err != nil {
			t.Fatal(err)
		}
		want = append(want, client.Database{Name: name})
	}
	// The leader must have snapshotted and compacted its log past where
	// the follower stopped before the follower comes back. The leader of
	// now: on a loaded machine leadership may have moved since the kill.
	waitFor(t, 30*time.Second, "the leader to compact its log", func() bool {
		now := c.Leader()
		return now != nil && strings.Contains(readLog(t, now), "compacting logs")
	})
	c.Restart(follower)
	checkVotersAgree(t, c, want)
	if !strings.Contains(readLog(t, follower), "Installed remote snapshot") {
		t.Fatal("the lagging follower caught up without installing a snapshot")
	}
	for _, nd := range c.Nodes {
		c.Kill(nd)
	}
	for _, nd := range c.Nodes {
		c.Restart(nd)
	}
	c.WaitLeader(30 * time.Second)
	checkVotersAgree(t, c, want)
}

// TestMetaWipedVoterRejoins: a voter whose folder is wiped comes back as a
// new incarnation. It must rejoin through the leader (old membership
// removed, re-added as non-voter, promoted once caught up), and at no point
// may a term have two leaders, which a voter that forgot its vote could
// cause.
func TestMetaWipedVoterRejoins(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	for i := range 20 {
		if err := cl.Admin().CreateDatabase(ctx, fmt.Sprintf("w%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	obs := observeLeaders(t, c)
	for round := range 2 {
		victim := c.WaitLeader(10 * time.Second) // the worst case: the leader, whose vote elected it
		c.Kill(victim)
		c.Wipe(victim)
		c.Restart(victim)
		waitFor(t, 30*time.Second, "the wiped node to become a voter again", func() bool {
			st, err := cl.Admin().ClusterStatus(ctx)
			if err != nil {
				return false
			}
			for _, v := range st.Voters {
				if v.ID == victim.ID {
					return v.Suffrage == "voter" && (v.State == "follower" || v.State == "leader")
				}
			}
			return false
		})
		// Force elections with the new incarnation voting.
		if l := c.WaitLeader(10 * time.Second); l != nil {
			cl.Admin().TransferLeadership(ctx, 0)
		}
		if err := cl.Admin().CreateDatabase(ctx, fmt.Sprintf("after%d", round)); err != nil {
			t.Fatal(err)
		}
	}
	obs.stop()
	if dup := obs.duplicates(); len(dup) > 0 {
		t.Fatalf("terms with two leaders: %v", dup)
	}
	dbs, err := cl.Admin().ListDatabases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dbs) != 22 {
		t.Fatalf("catalog after rejoins: %d databases", len(dbs))
	}
	checkVotersAgree(t, c, dbs)
}

// leaderObserver polls every node's Raft status and records which node
// claimed leadership in which term.
type leaderObserver struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      chan struct{}
	leaders map[uint64]map[uint32]bool
}

func observeLeaders(t *testing.T, c *Cluster) *leaderObserver {
	ctx, cancel := context.WithCancel(t.Context())
	o := &leaderObserver{cancel: cancel, done: make(chan struct{}), mu: make(chan struct{}, 1), leaders: map[uint64]map[uint32]bool{}}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			for _, nd := range c.Nodes {
				if !nd.running() {
					continue
				}
				pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
				st, err := c.raftStatus(pctx, nd)
				pcancel()
				if err == nil && st.State == "leader" {
					o.mu <- struct{}{}
					if o.leaders[st.Term] == nil {
						o.leaders[st.Term] = map[uint32]bool{}
					}
					o.leaders[st.Term][st.NodeID] = true
					<-o.mu
				}
			}
		}
	}()
	return o
}

func (o *leaderObserver) stop() { o.cancel(); <-o.done }

func (o *leaderObserver) duplicates() map[uint64][]uint32 {
	out := map[uint64][]uint32{}
	for term, ids := range o.leaders {
		if len(ids) > 1 {
			for id := range ids {
				out[term] = append(out[term], id)
			}
		}
	}
	return out
}

func readLog(t *testing.T, nd *Node) string {
	data, _ := readFile(nd.logPath)
	return string(data)
}

func tableSpec(db, name string) client.TableSpec {
	return client.TableSpec{Database: db, Name: name, Schema: "id BIGINT NOT NULL, v STRING", PrimaryKey: []string{"id"}}
}
