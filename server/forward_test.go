package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestForwardedProposalOutlivesAPausedLeader: a meta node forwards a
// proposal to the metadata leader, which then stops answering (its calls
// held, as a SIGSTOPped process holds them) and loses leadership. The
// forwarded attempt must be given up once the node sees another leader, and
// the proposal retried there under the same request id; before, it waited
// on the old leader for as long as the caller let it, and a node
// registering at that moment never became ready.
func TestForwardedProposalOutlivesAPausedLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	admin, err := client.Connect(ctx, c.Addrs()...)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	st, err := admin.Admin().ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.Node(st.Leader)
	var via *testcluster.Node
	for _, nd := range c.Nodes() {
		if nd.ID != st.Leader {
			via = nd
			break
		}
	}
	before := leader.Proxy().CallsFrom(testcluster.RPCPropose, testcluster.FromNodes) // the nodes' registrations
	release := leader.Proxy().Hold(testcluster.RPCPropose, testcluster.FromNodes)
	defer release()
	// One call straight to the node, without the SDK's retries, which
	// would hide a forwarded attempt that never ends.
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	created := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := pb.NewDRPCMetaClient(pool.Conn(via.Addr())).CreateDatabase(cctx, &pb.CreateDatabaseRequest{Name: "held"})
		created <- err
	}()
	for leader.Proxy().CallsFrom(testcluster.RPCPropose, testcluster.FromNodes) == before {
		select {
		case err := <-created:
			t.Fatalf("CreateDatabase returned (%v) before its forwarded proposal reached the leader", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := admin.Admin().TransferLeadership(ctx, via.ID); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("CreateDatabase through node %d, forwarded to a leader that stopped answering: %v", via.ID, err)
	}
	dbs, err := admin.Admin().ListDatabases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, db := range dbs {
		if db.Name == "held" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("databases %v: want \"held\" once", dbs)
	}
}
