package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

// appendOne appends row id with acks and waits for its answer, at most
// deliveryTimeout.
func appendOne(t *testing.T, ctx context.Context, tbl *client.Table, id int64, acks client.Acks, deliveryTimeout time.Duration) error {
	t.Helper()
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: acks, DeliveryTimeout: deliveryTimeout,
		RequestTimeout: min(deliveryTimeout, 2*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	f, err := w.Append(ctx, encodeRow(t, tbl, id, "x"))
	if err != nil {
		return err
	}
	_, err = f.Wait(ctx)
	return err
}

// TestAlterLiveProperties: ALTER TABLE on a running 3-node cluster takes
// effect without a restart. Lowering log.ttl makes every replica delete
// its sealed segments of older records; with a node stopped, acks=all
// writes are taken while min.insync.replicas is 2, refused
// (NOT_ENOUGH_REPLICAS) once it is raised to 3 (acks=1 writes still
// taken), and taken again once it is back at 2.
func TestAlterLiveProperties(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	const db, name = "alter", "events"
	tbl := createLogTableWith(t, ctx, cl, db, name, 1, map[string]string{"log.segment.bytes": "64KiB", "min.insync.replicas": "2"})
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { pool.Close() })
	view := func() bucketView {
		v, _ := viewBucket(ctx, c, pool, db, name)
		return v
	}
	alter := func(key, value string) {
		t.Helper()
		if _, err := cl.Admin().AlterTable(ctx, db, name, client.AlterTable{Set: map[string]string{key: value}}); err != nil {
			t.Fatalf("alter %s=%s: %v", key, value, err)
		}
	}
	segments := func(nd *Node) int {
		segs, err := filepath.Glob(filepath.Join(nd.DataDir, "tablet", "t*-b0", "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		return len(segs)
	}

	// log.ttl: 300 KB of records roll several segments, kept under the
	// default 7 days; at 1 s, every node deletes the sealed ones.
	appendPadded(t, ctx, tbl, 0, 300)
	waitISRFull(t, ctx, cl, db, name)
	for _, nd := range c.Nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to hold the records' segments", nd.ID), func() bool { return segments(nd) >= 4 })
	}
	if v := view(); v.localStart != 0 {
		t.Fatalf("the log starts at %d before log.ttl was lowered", v.localStart)
	}
	alter("log.ttl", "1s")
	waitFor(t, 30*time.Second, "the leader's log to start past the expired records", func() bool { return view().localStart > 0 })
	for _, nd := range c.Nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to delete its expired segments", nd.ID), func() bool { return segments(nd) <= 2 })
	}
	alter("log.ttl", "7d")

	// min.insync.replicas, with one follower stopped.
	v := view()
	var follower *Node
	for _, id := range v.record.Replicas {
		if id != v.record.Leader {
			follower = c.Nodes[id-1]
			break
		}
	}
	c.Stop(follower)
	waitFor(t, 60*time.Second, "the stopped follower out of the ISR", func() bool {
		v := view()
		return v.record != nil && v.record.Leader != 0 && len(v.record.Isr) == 2
	})
	if err := appendOne(t, ctx, tbl, 1000, client.AcksAll, 30*time.Second); err != nil {
		t.Fatalf("acks=all with 2 in sync and min.insync.replicas 2: %v", err)
	}
	alter("min.insync.replicas", "3")
	waitFor(t, 30*time.Second, "acks=all writes refused", func() bool {
		err := appendOne(t, ctx, tbl, 1001, client.AcksAll, 3*time.Second)
		if err != nil && !errors.Is(err, transport.ErrNotEnoughReplicas) {
			t.Logf("acks=all with min.insync.replicas 3: %v", err)
		}
		return errors.Is(err, transport.ErrNotEnoughReplicas)
	})
	if err := appendOne(t, ctx, tbl, 1002, client.AcksLeader, 30*time.Second); err != nil {
		t.Fatalf("acks=1 with min.insync.replicas 3: %v", err)
	}
	alter("min.insync.replicas", "2")
	waitFor(t, 30*time.Second, "acks=all writes taken again", func() bool {
		return appendOne(t, ctx, tbl, 1003, client.AcksAll, 5*time.Second) == nil
	})
	c.Restart(follower)
	waitISRFull(t, ctx, cl, db, name)
}

// TestKVSnapshotRestoreAcrossAlter: a primary-key table gains a column
// between its first upserts and its KV snapshot, so the snapshot holds
// rows of both schema versions; a follower wiped afterwards restores it
// (onto a new incarnation, a new replica) and replays the changelog after
// it. Once it leads, every row reads back: the rows stored before the
// ALTER with the new column null, the rows upserted with it after, before
// and after the snapshot, with their value.
func TestKVSnapshotRestoreAcrossAlter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and wipes one node")
	}
	f := newSnapshotFixture(t, "altsnap")
	ctx := t.Context()
	f.upsertRound(0) // schema version 1, every key
	if _, err := f.cl.Admin().AlterTable(ctx, f.db, "kv", client.AlterTable{
		AddColumns: []record.Column{{Name: "note", Type: record.String(), Nullable: true}}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.cl.Table(ctx, f.db, "kv")
	if err != nil {
		t.Fatal(err)
	}
	f.tbl = tbl
	// upsertNotes upserts the keys of round, with the note "r<round>".
	upsertNotes := func(round int, of func(a int) bool) {
		w, err := f.tbl.NewUpsertWriter(client.UpsertWriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(ctx)
		pad := strings.Repeat("s", 200)
		for a := range snapshotKeys {
			if of(a) {
				if _, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":"k","name":"%s","v":%d,"note":"r%d"}`,
					a, pad, round*snapshotKeys+a, round)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	inRound1 := func(a int) bool { return a%2 == 0 }
	inRound2 := func(a int) bool { return a%3 == 0 }
	upsertNotes(1, inRound1)
	hw := f.view().hw
	waitFor(t, 60*time.Second, "a KV snapshot after the ALTER and the changelog's start tiered away", func() bool {
		v := f.view()
		n := len(v.record.GetKvSnapshots())
		return n > 0 && v.record.KvSnapshots[n-1].Offset >= hw && v.localStart > 0
	})
	upsertNotes(2, inRound2) // after the snapshot: replayed from the changelog
	target := f.follower()
	t.Logf("wiping follower node %d", target.ID)
	f.c.Kill(target)
	f.c.Wipe(target)
	f.c.Restart(target)
	waitFor(t, 60*time.Second, "the wiped replica to restore from a KV snapshot", func() bool {
		return strings.Contains(readLog(t, target), "restored KV store from a snapshot")
	})
	s := f.tbl.Schema()
	for a, row := range f.leadAndLookup(target) {
		round, note := 0, ""
		if inRound2(a) {
			round, note = 2, "r2"
		} else if inRound1(a) {
			round, note = 1, "r1"
		}
		if row == nil {
			t.Fatalf("key %d on node %d: no row", a, target.ID)
		}
		v := record.NewRowView(s, row)
		got := ""
		if !v.IsNull(4) {
			got = v.String(4)
		}
		if v.Int64(3) != int64(round*snapshotKeys+a) || got != note {
			t.Fatalf("key %d on node %d: %s; want v %d, note %q", a, target.ID, rowJSONOf(t, f.tbl, row), round*snapshotKeys+a, note)
		}
	}
}
