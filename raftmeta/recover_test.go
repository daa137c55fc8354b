package raftmeta

import (
	"fmt"
	"testing"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
)

// TestRecoverLoneSurvivor: a 3-voter group loses two voters for good. The
// survivor cannot elect itself; Recover makes it the only voter, and it
// comes back with every database, from its snapshot and from the log
// after it, and takes writes again.
func TestRecoverLoneSurvivor(t *testing.T) {
	g := newGroup(t, 3)
	ctx := t.Context()
	leader, _ := g.leader()
	for i := range 20 {
		res, err := leader.Propose(ctx, createDB(fmt.Sprintf("db%02d", i)))
		if err != nil || metastate.ResultError(res) != nil {
			t.Fatalf("propose: %v %v", err, res)
		}
		if i == 9 {
			// Half the databases in a snapshot, half in the log after it.
			waitUntil(t, func() bool { return len(g.nodes[0].State().Databases()) == 10 })
			if err := g.nodes[0].Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Node 1 must have applied everything before the others go.
	waitUntil(t, func() bool { return len(g.nodes[0].State().Databases()) == 20 })
	for i := range g.nodes {
		g.nodes[i].Close()
		g.nodes[i] = nil
	}
	if err := Recover(g.dirs[0], 1, []Server{{ID: 2, Address: g.addrs[1], Voter: true}}); err == nil {
		t.Fatal("recovered to voters without this node")
	}
	if err := Recover(g.dirs[0], 1, []Server{{ID: 1, Address: g.addrs[0], Voter: true}}); err != nil {
		t.Fatal(err)
	}
	servers, err := Configuration(g.dirs[0], 1)
	if err != nil || len(servers) != 1 || servers[0].ID != 1 || !servers[0].Voter {
		t.Fatalf("configuration after recovery: %v %v", servers, err)
	}
	g.nodes[0] = g.open(0)
	n, _ := g.leader()
	if n != g.nodes[0] {
		t.Fatal("another node leads")
	}
	if dbs := n.State().Databases(); len(dbs) != 20 {
		t.Fatalf("databases after recovery: %d", len(dbs))
	}
	res, err := n.Propose(ctx, createDB("after"))
	if err != nil || metastate.ResultError(res) != nil {
		t.Fatalf("propose after recovery: %v %v", err, res)
	}
	if err := Recover(t.TempDir(), 1, []Server{{ID: 1, Address: g.addrs[0], Voter: true}}); err == nil {
		t.Fatal("recovered a folder without Raft state")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
