package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/transport"
)

// TestAlterMinISRLive: ALTER TABLE reaches running replicas. With
// min.insync.replicas 3 and a node stopped, acks=all writes are refused
// as not enough replicas; altered to 2, the same leader takes them, no
// node restarted.
func TestAlterMinISRLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and stops a node")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	const db, name = "alter", "events"
	tbl := createLogTableWith(t, ctx, cl, db, name, 1, map[string]string{"min.insync.replicas": "3"})
	waitISRFull(t, ctx, cl, db, name)
	write := func(id int64) error {
		w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll, DeliveryTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(context.Background())
		f, err := w.Append(ctx, encodeRow(t, tbl, id, "x"))
		if err != nil {
			return err
		}
		_, err = f.Wait(ctx)
		return err
	}
	if err := write(0); err != nil {
		t.Fatalf("a write with every replica in sync: %v", err)
	}
	desc, err := cl.Admin().DescribeTable(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	b := desc.Placement[0]
	var stopped *Node
	for _, id := range b.Replicas {
		if id != b.Leader {
			stopped = c.Nodes[id-1]
			break
		}
	}
	c.Stop(stopped)
	waitFor(t, 60*time.Second, fmt.Sprintf("node %d out of the ISR", stopped.ID), func() bool {
		d, err := cl.Admin().DescribeTable(ctx, db, name)
		return err == nil && len(d.Placement[0].ISR) == 2 && !slices.Contains(d.Placement[0].ISR, stopped.ID)
	})
	if err := write(1); !errors.Is(err, transport.ErrNotEnoughReplicas) {
		t.Fatalf("a write with 2 of min.insync.replicas 3 in sync: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	out := c.MustCLI("table", "alter", db+"."+name, "--set", "min.insync.replicas=2")
	t.Logf("alter: %s", out)
	waitFor(t, 30*time.Second, "an acks=all write with min.insync.replicas 2", func() bool { return write(2) == nil })
	if d, err := cl.Admin().DescribeTable(ctx, db, name); err != nil || d.Placement[0].Leader != b.Leader {
		t.Fatalf("the leader changed (%v, %v): the write must be taken by the one that refused it", d, err)
	}
	c.Restart(stopped)
	waitISRFull(t, ctx, cl, db, name)
}
