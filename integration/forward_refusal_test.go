package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// TestFollowerForwardsRefusals: a metadata read a follower forwards to the
// leader comes back with the leader's refusal at once, not as a TIMEOUT
// after the follower retried it for 10 s (server/meta.forward read its
// attempt's context after cancelling it, so every refusal looked like a
// leader that did not answer). A writer meeting a new partition asks for
// it first and expects UNKNOWN_PARTITION: through a follower, each new
// partition stalled its writers for the SDK's 5 s attempt timeout (found
// by the chaos scenario partitioned-log-under-faults).
func TestFollowerForwardsRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	leader := c.WaitLeader(20 * time.Second)
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "fw"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "fw", Name: "events", Buckets: 1, Replication: 3,
		Schema: "dt STRING NOT NULL, n BIGINT NOT NULL", PartitionKeys: []string{"dt"}}); err != nil {
		t.Fatal(err)
	}
	for _, nd := range c.Nodes {
		if nd == leader {
			continue
		}
		one, err := c.connect(ctx, nd.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = one.Admin().DescribeTable(cctx, "fw", "nope")
		cancel()
		if !errors.Is(err, transport.ErrUnknownTable) {
			t.Errorf("DescribeTable of a table that does not exist through follower node %d: %v, want UNKNOWN_TABLE at once", nd.ID, err)
		}
		tbl, err := one.Table(ctx, "fw", "events")
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel = context.WithTimeout(ctx, 3*time.Second)
		_, err = tbl.Partition(cctx, "dt=2026-01-01")
		cancel()
		if !errors.Is(err, client.ErrUnknownPartition) {
			t.Errorf("a partition that does not exist through follower node %d: %v, want UNKNOWN_PARTITION at once", nd.ID, err)
		}
	}
}
