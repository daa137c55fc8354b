package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
)

// TestUncleanElectionOverLake (Lake 4): a lake-enabled bucket of two
// replicas; its follower B is stopped, the leader A goes on alone and the
// lake tiers A's records past B's end; then A is killed and an unclean
// election makes B the leader of a new history. The lake must not keep
// A's lost records past where B's history parts from it, nor miss B's:
// once B's cut is committed and the lake has caught up, the lake's files
// hold, offset by offset, the shared prefix and every record acknowledged
// after the election where its producer was told, once each. Without the
// fence the lake kept A's records and never tiered B's at those offsets.
func TestUncleanElectionOverLake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster, stops one node and kills another")
	}
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remoteDir, "--tiering-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	const db, name = "uncleanlake", "events"
	if err := cl.Admin().CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: logTableSchema,
		Buckets: 1, Replication: 2, Properties: map[string]string{"min.insync.replicas": "1",
			"datalake.enabled": "true", "datalake.freshness": "1s", "log.segment.bytes": "64KiB"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	store, err := tiering.NewFolder(remoteDir)
	if err != nil {
		t.Fatal(err)
	}
	lt := lake.NewTable(store, fmt.Sprintf("lake/%s/%s-%d", db, name, tbl.TableID()))
	waitISRFull(t, ctx, cl, db, name)
	view := func() bucketView {
		v, _ := viewBucket(ctx, c, pool, db, name)
		return v
	}
	first := view()
	a := c.Nodes[first.record.Leader-1]
	var b *Node
	for _, id := range first.record.Replicas {
		if id != a.ID {
			b = c.Nodes[id-1]
		}
	}

	const shared = 1000
	appendPadded(t, ctx, tbl, 0, shared)
	waitFor(t, 60*time.Second, "the lake to hold the shared records", func() bool {
		return view().record.GetLakeOffset() >= shared
	})
	bEpoch := nodeEpochOf(ctx, cl, b.ID)
	t.Logf("stopping node %d (B); node %d (A) leads on alone", b.ID, a.ID)
	c.Stop(b)
	waitFor(t, 30*time.Second, "the ISR to shrink to A", func() bool {
		v := view().record
		return v != nil && slices.Equal(v.Isr, []uint32{a.ID})
	})
	const aEnd = 2500
	appendPadded(t, ctx, tbl, shared, aEnd)
	waitFor(t, 60*time.Second, "the lake to hold A's records past B's end", func() bool {
		return view().record.GetLakeOffset() >= aEnd
	})
	t.Logf("killing node %d (A): the lake holds [0, %d)", a.ID, view().record.GetLakeOffset())
	c.Kill(a)
	c.Restart(b)
	waitFor(t, 60*time.Second, "B to register again", func() bool { return nodeEpochOf(ctx, cl, b.ID) > bEpoch })
	waitFor(t, 60*time.Second, "an unclean election to pick B", func() bool {
		els, err := cl.Admin().ElectLeaders(ctx, db, name, client.ElectOptions{Unclean: true})
		return err == nil && len(els) == 1 && els[0].Elected && els[0].Bucket.Leader == b.ID && els[0].Unclean
	})

	const written = 1500
	offsets := appendRecorded(t, ctx, tbl, 100_000, written, 200)
	newFirst := slices.Min(offsets)
	end := slices.Max(offsets) + 1
	waitFor(t, 90*time.Second, "B's cut, the lake to tier B's history and that version to be published", func() bool {
		resp, err := lakeState(ctx, c, pool, db, name)
		if err != nil || len(resp.GetBuckets()) != 1 {
			return false
		}
		v := resp.GetBuckets()[0]
		if v.GetRemoteFenceEpoch() != 0 || v.GetLakeOffset() < end {
			return false
		}
		// Read by path, the committed version: a publish follows its
		// commit, and the version before may be the old history's.
		_, n, err := lt.ReadCurrent(ctx)
		return err == nil && int64(n) == resp.GetTable().GetLake().GetVersion()
	})
	want := map[int64]int64{}
	for i, off := range offsets {
		want[off] = 100_000 + int64(i)
	}
	seen := map[int64]bool{}
	for _, r := range lakeRowsSeen(t, ctx, store, lt) {
		switch id, ok := want[r.offset]; {
		case seen[r.offset]:
			t.Fatalf("offset %d is in the lake twice", r.offset)
		case ok && r.id != id:
			t.Fatalf("the lake holds id %d at offset %d; B's producer was told id %d is there", r.id, r.offset, id)
		case !ok && r.offset >= newFirst:
			t.Fatalf("the lake holds id %d at offset %d, which B never acknowledged there (A's lost history)", r.id, r.offset)
		case !ok && r.id != r.offset:
			t.Fatalf("offset %d of the shared prefix holds id %d in the lake", r.offset, r.id)
		}
		seen[r.offset] = true
	}
	for off := range want {
		if !seen[off] {
			t.Fatalf("the lake lacks offset %d, acknowledged after the election", off)
		}
	}
	t.Logf("the lake holds [0, %d): the shared prefix to %d, then B's %d records", end, newFirst, written)
}
