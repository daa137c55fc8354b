package metastate

import (
	"slices"
	"testing"

	"github.com/floedb/floe/transport/pb"
)

// TestCreateTableOnLiveNodes: with live_nodes, replicas go only to the
// live tablet nodes, and the replication factor counts only them.
func TestCreateTableOnLiveNodes(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(4)
	h.ok(createDB("db"))
	res := h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) {
		c.Buckets, c.Replication, c.LiveNodes = 6, 2, []uint32{2, 4, 9}
	})))
	_, buckets, err := h.s.Table("db", "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		for _, r := range b.Replicas {
			if r != 2 && r != 4 {
				t.Fatalf("bucket %d placed on node %d, not a live node", b.Bucket, r)
			}
		}
	}
	if res.GetTable().GetReplication() != 2 {
		t.Fatalf("replication %d", res.GetTable().GetReplication())
	}
	refused := h.apply(createTable(ordersTable("db", "t2", func(c *pb.CreateTable) {
		c.Replication, c.LiveNodes = 3, []uint32{1, 3}
	})))
	wantRefused(t, refused, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS)
	if !slices.Equal(buckets[0].Isr, buckets[0].Replicas) {
		t.Fatalf("new bucket ISR %v, replicas %v", buckets[0].Isr, buckets[0].Replicas)
	}
}
