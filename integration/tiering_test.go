package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// tieringArgs make the nodes tier to one shared folder every 200 ms.
func tieringArgs(t *testing.T) []string {
	return []string{"--remote-dir", filepath.Join(t.TempDir(), "remote"), "--tiering-interval", "200ms"}
}

// createTieredTable makes a one-bucket log table, three replicas, that
// rolls 64 KiB segments and keeps one sealed segment locally once remote.
func createTieredTable(t *testing.T, ctx context.Context, cl *client.Client, db, name string) *client.Table {
	t.Helper()
	if err := cl.Admin().CreateDatabase(ctx, db, client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: logTableSchema,
		Buckets: 1, Replication: 3, Properties: map[string]string{"log.segment.bytes": "64KiB", "log.local.segments": "1"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// appendPadded appends ids [from, to) with about 1 KB each and waits for
// every ack.
func appendPadded(t *testing.T, ctx context.Context, tbl *client.Table, from, to int64) {
	t.Helper()
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	var futs []*client.AppendFuture
	for i := from; i < to; i++ {
		f, err := w.Append(ctx, encodeRow(t, tbl, i, noise(i, 1000)))
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// bucketView is what the metadata and the leader say of bucket 0.
type bucketView struct {
	record     *pb.BucketRecord
	localStart int64 // the leader's local log start
	hw         int64
}

// viewBucket reads bucket 0's record from the metadata and its leader's
// local log start and high watermark.
func viewBucket(ctx context.Context, c *Cluster, pool *transport.Pool, db, name string) (bucketView, error) {
	var v bucketView
	var lastErr error
	for _, nd := range c.Nodes {
		if !nd.running() {
			continue
		}
		resp, err := pb.NewDRPCMetaClient(pool.Conn(nd.Addr)).GetTable(ctx, &pb.GetTableRequest{Database: db, Name: name})
		if err != nil {
			lastErr = err
			continue
		}
		v.record = resp.Buckets[0]
		break
	}
	if v.record == nil {
		return v, lastErr
	}
	if v.record.Leader == 0 {
		return v, nil
	}
	leader := c.Nodes[v.record.Leader-1]
	resp, err := pb.NewDRPCTabletClient(pool.Conn(leader.Addr)).Fetch(ctx, &pb.FetchRequest{
		Buckets: []*pb.FetchBucket{{TableId: v.record.TableId, Offset: 1 << 62, LeaderEpoch: -1}}, MaxBytes: 1})
	if err != nil {
		return v, err
	}
	fb := resp.Buckets[0]
	v.localStart, v.hw = fb.LogStartOffset, fb.HighWatermark
	return v, nil
}

// TestTieringAcrossKills: a bucket tiers its sealed segments to remote
// storage and deletes them locally while nodes are killed. A follower
// killed while the leader deleted what it lacked catches up from the
// remote log when it comes back; the next leader (after a SIGKILL of the
// first) goes on committing the remote log under its own epoch; every
// acknowledged record reads back once, from the remote start through the
// local tail.
func TestTieringAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and kills two nodes in turn")
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: tieringArgs(t)})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	tbl := createTieredTable(t, ctx, cl, "tier", "events")
	view := func() bucketView {
		v, _ := viewBucket(ctx, c, pool, "tier", "events") // a node just killed answers nothing: look again
		return v
	}

	appendPadded(t, ctx, tbl, 0, 1500)
	waitFor(t, 30*time.Second, "the leader to delete tiered segments", func() bool {
		v := view()
		return v.record != nil && v.localStart > 0 && v.record.GetRemoteLog().GetEndOffset() >= v.localStart
	})
	first := view()
	leader := c.Nodes[first.record.Leader-1]
	var follower *Node
	for _, id := range first.record.Replicas {
		if id != leader.ID {
			follower = c.Nodes[id-1]
			break
		}
	}
	followerEnd := first.hw
	t.Logf("killing follower node %d (end about %d); leader node %d", follower.ID, followerEnd, leader.ID)
	c.Kill(follower)
	appendPadded(t, ctx, tbl, 1500, 3000)
	waitFor(t, 30*time.Second, "the leader's local start to pass the killed follower's end", func() bool {
		return view().localStart > followerEnd
	})
	c.Restart(follower)
	waitISRFull(t, ctx, cl, "tier", "events")
	if log := readLog(t, follower); strings.Contains(log, "cannot catch up") || !strings.Contains(log, "caught up from the remote log") {
		t.Fatalf("node %d did not catch up from the remote log:\n%s", follower.ID, log)
	}

	before := view().record
	t.Logf("killing leader node %d at leader epoch %d", leader.ID, before.LeaderEpoch)
	c.Kill(leader)
	waitFor(t, 30*time.Second, "a new leader", func() bool {
		v := view().record
		return v != nil && v.Leader != 0 && v.Leader != leader.ID && v.LeaderEpoch > before.LeaderEpoch
	})
	appendPadded(t, ctx, tbl, 3000, 4000)
	waitFor(t, 30*time.Second, "the new leader to commit the remote log", func() bool {
		v := view().record
		return v.GetRemoteLog().GetLeaderEpoch() == v.GetLeaderEpoch() && v.GetRemoteLog().GetEndOffset() > before.GetRemoteLog().GetEndOffset()
	})
	c.Restart(leader)
	waitISRFull(t, ctx, cl, "tier", "events")
	waitHWSettled(t, ctx, cl, "tier", "events")

	records := scanAll(t, ctx, tbl, 1)
	seen := map[int64]int{}
	for _, r := range records {
		seen[r.id]++
	}
	for id := range int64(4000) {
		if seen[id] != 1 {
			t.Fatalf("acknowledged record %d read %d times", id, seen[id])
		}
	}
	if len(records) != 4000 {
		t.Fatalf("%d records read, 4000 written", len(records))
	}
	final := view()
	t.Logf("remote log %v; leader's local log starts at %d, high watermark %d", final.record.GetRemoteLog(), final.localStart, final.hw)
	// Every node keeps only a few segments locally, once its retention
	// has run past the committed remote end (each node on its own clock).
	for _, nd := range c.Nodes {
		var segs []string
		var err error
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to keep only a few local segments", nd.ID), func() bool {
			segs, err = filepath.Glob(filepath.Join(nd.DataDir, "tablet", "t*-b0", "*.log"))
			return err == nil && len(segs) > 0 && len(segs) <= 4
		})
	}
}

// snapshotFixture is a primary-key table that tiers its changelog and
// takes KV snapshots every second, on a 3-node cluster.
type snapshotFixture struct {
	t    *testing.T
	c    *Cluster
	cl   *client.Client
	tbl  *client.Table
	pool *transport.Pool
	db   string
}

const snapshotKeys = 3000

func newSnapshotFixture(t *testing.T, db string) *snapshotFixture {
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: tieringArgs(t)})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: "kv", Schema: kvClientSchema,
		PrimaryKey: []string{"a", "b"}, Buckets: 1, Replication: 3, Properties: map[string]string{
			"log.segment.bytes": "64KiB", "log.local.segments": "1", "kv.snapshot.interval": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, "kv")
	if err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { pool.Close() })
	return &snapshotFixture{t: t, c: c, cl: cl, tbl: tbl, pool: pool, db: db}
}

// upsertRound writes every key with value round*snapshotKeys+key.
func (f *snapshotFixture) upsertRound(round int) {
	t, ctx := f.t, f.t.Context()
	w, err := f.tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	pad := strings.Repeat("s", 200)
	var futures []*client.UpsertFuture
	for a := range snapshotKeys {
		fut, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":"k","name":"%s","v":%d}`, a, pad, round*snapshotKeys+a))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, fut)
	}
	for _, fut := range futures {
		if _, err := fut.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *snapshotFixture) view() bucketView {
	v, _ := viewBucket(f.t.Context(), f.c, f.pool, f.db, "kv") // a node just killed answers nothing: look again
	return v
}

// waitSnapshotAndTiered waits for a committed KV snapshot and for the
// leader to have deleted the changelog's start locally.
func (f *snapshotFixture) waitSnapshotAndTiered() {
	waitFor(f.t, 60*time.Second, "a KV snapshot and the changelog's start tiered away", func() bool {
		v := f.view()
		return v.record != nil && len(v.record.KvSnapshots) > 0 && v.localStart > 0 &&
			v.record.KvSnapshots[len(v.record.KvSnapshots)-1].Offset > 0
	})
}

// follower is the first replica other than the leader in assignment
// order: the one that leads once the leader is killed.
func (f *snapshotFixture) follower() *Node {
	v := f.view()
	for _, id := range v.record.Replicas {
		if id != v.record.Leader {
			return f.c.Nodes[id-1]
		}
	}
	f.t.Fatal("no follower")
	return nil
}

// leadAndCheck kills the leader so that target leads, then checks that
// target serves every key with the value of the last round.
func (f *snapshotFixture) leadAndCheck(target *Node, lastRound int) {
	for a, row := range f.leadAndLookup(target) {
		if row == nil || record.NewRowView(f.tbl.Schema(), row).Int64(3) != int64(lastRound*snapshotKeys+a) {
			f.t.Fatalf("key %d on node %d: %s", a, target.ID, rowJSONOf(f.t, f.tbl, row))
		}
	}
}

// leadAndLookup kills the leader so that target leads, then returns the
// rows of every key as target serves them.
func (f *snapshotFixture) leadAndLookup(target *Node) [][]byte {
	t, ctx := f.t, f.t.Context()
	waitFor(t, 60*time.Second, "the replica back in the ISR", func() bool {
		v := f.view()
		return v.record != nil && len(v.record.Isr) == 3
	})
	// A wiped node rejoins the metadata group as a non-voter until it has
	// caught up: killing another node before would leave no quorum.
	waitFor(t, 60*time.Second, "three metadata voters", func() bool {
		n := 0
		for _, s := range f.c.voters() {
			if s == "voter" {
				n++
			}
		}
		return n == 3
	})
	f.c.Kill(f.c.Nodes[f.view().record.Leader-1])
	waitFor(t, 60*time.Second, "the replica to lead", func() bool {
		v := f.view()
		return v.record != nil && v.record.Leader == target.ID
	})
	// Linearizable: a new leader's high watermark may lag what the old one
	// acknowledged until its followers fetch in the new epoch.
	l, err := f.tbl.NewLookuper(client.LookuperOptions{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rows [][]byte
	waitFor(t, 30*time.Second, "lookups on the new leader", func() bool {
		rows, err = l.LookupBatch(ctx, kvClientKeys(t, f.tbl, snapshotKeys))
		return err == nil
	})
	return rows
}

// TestKVSnapshotRestoresWipedReplica: a primary-key table tiers its
// changelog and takes KV snapshots. A follower whose data folder is wiped
// comes back as a new incarnation; its leader no longer holds the
// changelog's start locally, so the replica restores the newest snapshot
// and replays what followed. Once it leads, it serves every key with its
// last value.
func TestKVSnapshotRestoresWipedReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and wipes one node")
	}
	f := newSnapshotFixture(t, "snap")
	f.upsertRound(0)
	f.upsertRound(1)
	f.waitSnapshotAndTiered()
	f.upsertRound(2) // after the snapshot: replayed from the changelog
	target := f.follower()
	t.Logf("wiping follower node %d", target.ID)
	f.c.Kill(target)
	f.c.Wipe(target)
	f.c.Restart(target)
	// The ISR may still list the wiped node until its new registration
	// removes it: wait for the restore itself.
	waitFor(t, 60*time.Second, "the wiped replica to restore from a KV snapshot", func() bool {
		return strings.Contains(readLog(t, target), "restored KV store from a snapshot")
	})
	f.leadAndCheck(target, 2)
}

// TestKVStoreLostWithTieredChangelog: a follower's KV database is deleted
// while the node is down, its log kept; the log no longer starts at 0
// (tiering deleted its start), so the store cannot be rebuilt from it
// alone: it restores the newest KV snapshot, applies the remote log from
// there up to the local log, then the local log. Once it leads, it serves
// every key with its last value.
func TestKVStoreLostWithTieredChangelog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	f := newSnapshotFixture(t, "lost")
	f.upsertRound(0)
	f.upsertRound(1)
	f.waitSnapshotAndTiered()
	f.upsertRound(2)
	target := f.follower()
	f.c.Stop(target)
	segs, _ := filepath.Glob(filepath.Join(target.DataDir, "tablet", "t*-b0", "*.log"))
	if len(segs) == 0 || strings.HasSuffix(filepath.Base(segs[0]), "00000000000000000000.log") {
		t.Fatalf("node %d's log still starts at 0 (%v): the test needs a tiered changelog", target.ID, segs)
	}
	if err := os.RemoveAll(filepath.Join(target.DataDir, "tablet", "kv")); err != nil {
		t.Fatal(err)
	}
	f.c.Restart(target)
	waitFor(t, 60*time.Second, "the store to be restored from a KV snapshot", func() bool {
		return strings.Contains(readLog(t, target), "restored KV store from a snapshot")
	})
	f.leadAndCheck(target, 2)
}
