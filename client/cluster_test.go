package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/floedb/floe/internal/testkit/testcluster"
	"github.com/floedb/floe/transport"
)

// tableBuckets is the part of a bucket status that is about one table, by
// bucket number.
func tableBuckets(t *testing.T, all []BucketStatus, database, table string) []BucketStatus {
	t.Helper()
	var out []BucketStatus
	for _, b := range all {
		if b.Database == database && b.Table == table {
			if int(b.Bucket) != len(out) {
				t.Fatalf("bucket %d of %s.%s out of order: %+v", b.Bucket, database, table, all)
			}
			out = append(out, b)
		}
	}
	return out
}

// TestAdminBucketStatus: every bucket comes with its leader's epochs, ISR
// and high watermark; a leader that does not answer the metadata leader
// costs its buckets their high watermark (with an error), not the call.
func TestAdminBucketStatus(t *testing.T) {
	fc, c := startCluster(t)
	tbl := fc.createTable(c, "t", testSchema, 3, 3)
	w := newWriter(t, tbl, AppendWriterOptions{})
	futures := appendIDs(t, w, tbl, 0, 30)
	ctx := guardCtx(t)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}

	all, err := c.Admin().BucketStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := tableBuckets(t, all, fc.db, "t")
	if len(got) != 3 {
		t.Fatalf("%d buckets of the table, want 3: %+v", len(got), all)
	}
	meta, err := fc.Table(ctx, fc.db, "t")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, b := range got {
		info := meta.Buckets[i]
		switch {
		case b.HighWatermark == nil || b.Error != "":
			t.Fatalf("bucket %d: no high watermark: %+v", i, b)
		case b.Offline || b.UnderReplicated || len(b.ISR) != 3 || len(b.Replicas) != 3 || b.Leader == 0:
			t.Fatalf("bucket %d: %+v", i, b)
		case b.Leader != info.Leader || b.LeaderEpoch != info.LeaderEpoch || b.BucketEpoch != info.BucketEpoch:
			t.Fatalf("bucket %d: leader %d epoch %d, the table says %d epoch %d", i, b.Leader, b.LeaderEpoch, info.Leader, info.LeaderEpoch)
		}
		if hw := fc.highWatermark(tbl, int32(i)); *b.HighWatermark != hw {
			t.Fatalf("bucket %d: high watermark %d, its leader says %d", i, *b.HighWatermark, hw)
		}
		total += *b.HighWatermark
	}
	if total != 30 {
		t.Fatalf("high watermarks add up to %d, want the 30 rows written", total)
	}

	// Bucket 0's leader stops answering the metadata leader's ListOffsets.
	silent := got[0].Leader
	release := fc.Node(silent).Proxy().Hold(testcluster.RPCListOffsets, testcluster.FromNodes)
	defer release()
	all, err = c.Admin().BucketStatus(ctx)
	if err != nil {
		t.Fatalf("a leader that does not answer failed the call: %v", err)
	}
	for _, b := range tableBuckets(t, all, fc.db, "t") {
		if b.Leader == silent {
			if b.HighWatermark != nil || !strings.Contains(b.Error, "did not answer") {
				t.Fatalf("bucket %d of the silent leader %d: %+v", b.Bucket, silent, b)
			}
		} else if b.HighWatermark == nil {
			t.Fatalf("bucket %d of leader %d, which answers: %+v", b.Bucket, b.Leader, b)
		}
	}
}

// TestAdminDrainNode: a drain moves every leadership of a node to another
// in-sync replica, reports the bucket whose only in-sync replica it is,
// marks the node draining, and UndrainNode clears the mark.
func TestAdminDrainNode(t *testing.T) {
	fc, c := startCluster(t)
	three := fc.createTable(c, "three", testSchema, 3, 3)
	one := fc.createTable(c, "one", testSchema, 1, 1)
	node := fc.leader(one, 0).ID
	ctx := guardCtx(t)
	t.Cleanup(func() { _, _ = c.Admin().UndrainNode(ctx, node) })

	res, err := c.Admin().DrainNode(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Node.Draining || res.Node.ID != node {
		t.Fatalf("node after the drain: %+v", res.Node)
	}
	var sawOne bool
	for _, e := range res.Buckets {
		switch {
		case e.Database == fc.db && e.Table == "one":
			sawOne = true
			if e.Moved || !errors.Is(e.Err, transport.ErrNotEnoughReplicas) || e.Bucket.Leader != node {
				t.Fatalf("the single replica's bucket: %+v", e)
			}
		case e.Database == fc.db && e.Table == "three":
			if !e.Moved || e.Bucket.Leader == node || e.Err != nil {
				t.Fatalf("bucket %d of a replicated table: %+v", e.Bucket.Bucket, e)
			}
		}
	}
	if !sawOne || res.NotMoved() == 0 {
		t.Fatalf("the drain did not list the bucket it could not move: %+v", res)
	}
	for b := range three.Buckets() {
		if l := fc.leader(three, b).ID; l == node {
			t.Fatalf("bucket %d still led by the drained node %d", b, node)
		}
	}
	st, err := c.Admin().ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Draining != (n.ID == node) {
			t.Fatalf("cluster status: node %d draining %v", n.ID, n.Draining)
		}
	}

	undone, err := c.Admin().UndrainNode(ctx, node)
	if err != nil || undone.Node.Draining || undone.Unchanged || len(undone.Buckets) != 0 {
		t.Fatalf("undrain: %+v, %v", undone, err)
	}
	if again, err := c.Admin().UndrainNode(ctx, node); err != nil || !again.Unchanged {
		t.Fatalf("undrain of a node not draining: %+v, %v", again, err)
	}
	if _, err := c.Admin().DrainNode(ctx, 99); !errors.Is(err, transport.ErrUnknownNode) {
		t.Fatalf("drain of an unknown node: %v", err)
	}
}

// TestAdminRemoveNodeRefusals: RemoveNode refuses a live node (saying to
// drain and stop it) and a node that is neither registered nor a member,
// and changes nothing. Removal itself is integration.TestNodeRemove.
func TestAdminRemoveNodeRefusals(t *testing.T) {
	fc, c := startCluster(t)
	one := fc.createTable(c, "one", testSchema, 1, 1)
	node := fc.leader(one, 0).ID
	ctx := guardCtx(t)
	_, err := c.Admin().RemoveNode(ctx, node)
	if !errors.Is(err, transport.ErrInvalidRequest) || !strings.Contains(err.Error(), "it is alive") ||
		!strings.Contains(err.Error(), "floe node drain") {
		t.Fatalf("removal of a live node: %v", err)
	}
	if _, err := c.Admin().RemoveNode(ctx, 99); !errors.Is(err, transport.ErrUnknownNode) {
		t.Fatalf("removal of an unknown node: %v", err)
	}
	st, err := c.Admin().ClusterStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Nodes, func(n Node) bool { return n.ID == node && n.Alive }) {
		t.Fatalf("node %d after a refused removal: %+v", node, st.Nodes)
	}
}
