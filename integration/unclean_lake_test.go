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
	u := startUncleanBucket(t, client.TableSpec{Database: "uncleanlake", Name: "events", Schema: logTableSchema,
		Properties: map[string]string{"log.segment.bytes": "64KiB"}})
	ctx := t.Context()

	const shared = 1000
	appendPadded(t, ctx, u.tbl, 0, shared)
	waitFor(t, 60*time.Second, "the lake to hold the shared records", func() bool {
		return u.view().record.GetLakeOffset() >= shared
	})
	u.stopB()
	const aEnd = 2500
	appendPadded(t, ctx, u.tbl, shared, aEnd)
	waitFor(t, 60*time.Second, "the lake to hold A's records past B's end", func() bool {
		return u.view().record.GetLakeOffset() >= aEnd
	})
	u.electB()

	const written = 1500
	offsets := appendRecorded(t, ctx, u.tbl, 100_000, written, 200)
	newFirst := slices.Min(offsets)
	end := slices.Max(offsets) + 1
	u.waitLake("B's cut, the lake to tier B's history and that version to be published", end)
	want := map[int64]int64{}
	for i, off := range offsets {
		want[off] = 100_000 + int64(i)
	}
	seen := map[int64]bool{}
	for _, r := range lakeRowsSeen(t, ctx, u.store, u.lt) {
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

// TestUncleanElectionOverPrimaryKeyLake (Lake 4, primary-key tables): as
// TestUncleanElectionOverLake, for a primary-key table, whose lake holds
// each key's latest row only: A's updates and inserts past B's end reach
// the lake, then B, elected uncleanly, updates, deletes and inserts keys
// of its own. The lake cannot go back to the cut by itself (no key's row
// as of the cut is left in it); the round rebuilds the bucket's lake from
// B's store and changelog. Once it has caught up, the lake holds exactly
// B's rows: none of A's lost values or keys, B's deletes gone, each row
// at its own offset. Without the rebuild the bucket's lake stayed at the
// cut for good.
func TestUncleanElectionOverPrimaryKeyLake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster, stops one node and kills another")
	}
	u := startUncleanBucket(t, client.TableSpec{Database: "uncleanpk", Name: "users", Schema: "id BIGINT NOT NULL, v BIGINT NOT NULL",
		PrimaryKey: []string{"id"}, Properties: map[string]string{}})
	ctx := t.Context()
	// upsert writes keys [from, to) with value v (v < 0: deletes them) and
	// waits for their acknowledgements.
	upsert := func(from, to, v int64) {
		t.Helper()
		w, err := u.tbl.NewUpsertWriter(client.UpsertWriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(ctx)
		for k := from; k < to; k++ {
			var f *client.UpsertFuture
			if v < 0 {
				f, err = w.DeleteJSON(ctx, fmt.Appendf(nil, `{"id":%d,"v":0}`, k))
			} else {
				f, err = w.UpsertJSON(ctx, fmt.Appendf(nil, `{"id":%d,"v":%d}`, k, v))
			}
			mustFuture(t, ctx, f, err)
		}
	}
	upsert(0, 200, 1) // offsets [0, 200): both replicas
	waitFor(t, 60*time.Second, "the lake to hold the shared keys", func() bool {
		return u.view().record.GetLakeOffset() >= 200
	})
	u.stopB()
	upsert(0, 100, 2)   // updates: [200, 400)
	upsert(200, 300, 2) // inserts: [400, 500)
	waitFor(t, 60*time.Second, "the lake to hold A's changes past B's end", func() bool {
		return u.view().record.GetLakeOffset() >= 500
	})
	u.electB()

	upsert(50, 150, 3)    // updates: [200, 400)
	upsert(150, 160, -1)  // deletes: [400, 410)
	upsert(1000, 1050, 3) // inserts: [410, 460)
	var end int64
	waitFor(t, 30*time.Second, "B's high watermark past its writes", func() bool {
		end = u.view().hw
		return end >= 460 // 100 updates (-U, +U), 10 deletes, 50 inserts past 200
	})
	u.waitLake("B's cut, the bucket's lake rebuilt and caught up, that version published", end)
	want := map[int64]int64{}
	for k := int64(0); k < 200; k++ {
		want[k] = 1
	}
	for k := int64(50); k < 150; k++ {
		want[k] = 3
	}
	for k := int64(150); k < 160; k++ {
		delete(want, k)
	}
	for k := int64(1000); k < 1050; k++ {
		want[k] = 3
	}
	got := map[int64]int64{}
	offsets := map[int64]bool{}
	for _, r := range lakeRowsSeen(t, ctx, u.store, u.lt) {
		if _, dup := got[r.id]; dup {
			t.Fatalf("key %d is in the lake twice", r.id)
		}
		if offsets[r.offset] || r.offset >= end {
			t.Fatalf("key %d at offset %d: taken twice, or past the log's end %d", r.id, r.offset, end)
		}
		got[r.id], offsets[r.offset] = r.v, true
	}
	for k, v := range got {
		if w, ok := want[k]; !ok || w != v {
			t.Fatalf("the lake holds key %d = %d; B's store has %d (present %v)", k, v, w, ok)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the lake holds %d keys, B's store %d", len(got), len(want))
	}
	t.Logf("the lake holds B's %d keys, below offset %d", len(got), end)
}

// uncleanBucket is a one-bucket lake-enabled table of two replicas on a
// three-node cluster tiering to a folder, for tests of an unclean
// election: its leader A and follower B; B is stopped, A leads on alone,
// then A is killed and B elected from outside the ISR.
type uncleanBucket struct {
	t        *testing.T
	c        *Cluster
	cl       *client.Client
	pool     *transport.Pool
	db, name string
	tbl      *client.Table
	store    *tiering.Folder
	lt       *lake.Table
	a, b     *Node
	bEpoch   uint64
}

// startUncleanBucket creates the table of spec (its lake and replication
// properties added) and waits for both replicas in the ISR.
func startUncleanBucket(t *testing.T, spec client.TableSpec) *uncleanBucket {
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remoteDir, "--tiering-interval", "200ms"}})
	ctx := t.Context()
	u := &uncleanBucket{t: t, c: c, cl: c.Client(ctx), pool: transport.NewPool(transport.PoolConfig{}), db: spec.Database, name: spec.Name}
	t.Cleanup(func() { u.pool.Close() })
	if err := u.cl.Admin().CreateDatabase(ctx, u.db); err != nil {
		t.Fatal(err)
	}
	spec.Buckets, spec.Replication = 1, 2
	spec.Properties["min.insync.replicas"], spec.Properties["datalake.enabled"], spec.Properties["datalake.freshness"] = "1", "true", "1s"
	if _, err := u.cl.Admin().CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var err error
	if u.tbl, err = u.cl.Table(ctx, u.db, u.name); err != nil {
		t.Fatal(err)
	}
	if u.store, err = tiering.NewFolder(remoteDir); err != nil {
		t.Fatal(err)
	}
	u.lt = lake.NewTable(u.store, fmt.Sprintf("lake/%s/%s-%d", u.db, u.name, u.tbl.TableID()))
	waitISRFull(t, ctx, u.cl, u.db, u.name)
	first := u.view()
	u.a = c.Nodes[first.record.Leader-1]
	for _, id := range first.record.Replicas {
		if id != u.a.ID {
			u.b = c.Nodes[id-1]
		}
	}
	return u
}

func (u *uncleanBucket) view() bucketView {
	v, _ := viewBucket(u.t.Context(), u.c, u.pool, u.db, u.name)
	return v
}

// stopB stops B and waits for the ISR to shrink to A.
func (u *uncleanBucket) stopB() {
	u.bEpoch = nodeEpochOf(u.t.Context(), u.cl, u.b.ID)
	u.t.Logf("stopping node %d (B); node %d (A) leads on alone", u.b.ID, u.a.ID)
	u.c.Stop(u.b)
	waitFor(u.t, 30*time.Second, "the ISR to shrink to A", func() bool {
		v := u.view().record
		return v != nil && slices.Equal(v.Isr, []uint32{u.a.ID})
	})
}

// electB kills A, restarts B and elects it uncleanly.
func (u *uncleanBucket) electB() {
	ctx := u.t.Context()
	u.t.Logf("killing node %d (A): the lake holds [0, %d)", u.a.ID, u.view().record.GetLakeOffset())
	u.c.Kill(u.a)
	u.c.Restart(u.b)
	waitFor(u.t, 60*time.Second, "B to register again", func() bool { return nodeEpochOf(ctx, u.cl, u.b.ID) > u.bEpoch })
	waitFor(u.t, 60*time.Second, "an unclean election to pick B", func() bool {
		els, err := u.cl.Admin().ElectLeaders(ctx, u.db, u.name, client.ElectOptions{Unclean: true})
		return err == nil && len(els) == 1 && els[0].Elected && els[0].Bucket.Leader == u.b.ID && els[0].Unclean
	})
}

// waitLake waits for B's cut, for the lake to hold the bucket below end,
// and for that version to be the one published by path (a publish
// follows its commit, and the version before may be the old history's).
func (u *uncleanBucket) waitLake(what string, end int64) {
	ctx := u.t.Context()
	waitFor(u.t, 90*time.Second, what, func() bool {
		resp, err := lakeState(ctx, u.c, u.pool, u.db, u.name)
		if err != nil || len(resp.GetBuckets()) != 1 {
			return false
		}
		v := resp.GetBuckets()[0]
		if v.GetRemoteFenceEpoch() != 0 || v.GetLakeOffset() < end {
			return false
		}
		_, n, err := u.lt.ReadCurrent(ctx)
		return err == nil && int64(n) == resp.GetTable().GetLake().GetVersion()
	})
}
