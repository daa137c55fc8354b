package integration

import (
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// TestTabletOnlyNode: a node with only the tablet role joins through the
// meta nodes, registers, is reported alive, receives replicas of a new
// table, and serves as their leader.
func TestTabletOnlyNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 4-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	nd := c.AddNode("tablet")
	c.WaitRegistered(30 * time.Second)
	ctx := t.Context()
	cl := c.Client(ctx)
	st, err := cl.Admin().ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Voters {
		if v.ID == nd.ID {
			t.Fatal("a tablet-only node became a metadata voter")
		}
	}
	if err := cl.Admin().CreateDatabase(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	info, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "t", Name: "e", Schema: logTableSchema, Buckets: 8, Replication: 3})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := cl.Admin().DescribeTable(ctx, "t", info.Name)
	if err != nil {
		t.Fatal(err)
	}
	led := 0
	for _, b := range desc.Placement {
		if b.Leader == nd.ID {
			led++
		}
	}
	if led == 0 {
		t.Fatalf("the tablet-only node leads none of 8 buckets: %+v", desc.Placement)
	}
	tbl, err := cl.Table(ctx, "t", "e")
	if err != nil {
		t.Fatal(err)
	}
	appendAcked(t, ctx, tbl, 0, 5000)
	if got := len(scanAll(t, ctx, tbl, 8)); got != 5000 {
		t.Fatalf("read %d records, want 5000", got)
	}
}
