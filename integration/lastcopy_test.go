package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

// damageLastCopyLine is what a leader logs each tiering round that meets
// the damaged sealed segment it holds the only in-sync copy of.
const damageLastCopyLine = "a sealed segment to upload is damaged, and this node holds the only in-sync copy"

// TestDamageOnLastInSyncReplica (issue 30, rule "damage and the last copy"
// 1): a bucket of two replicas whose follower is stopped keeps acknowledging
// acks=all writes with the leader alone in the ISR (min.insync.replicas=1).
// A byte of its first batch then goes bad on the leader's disk. The leader
// holds the only copy of everything it acknowledged, so it must neither
// leave the ISR nor cut its log: a consumer gets CORRUPT for that batch and
// every later record from the next batch on; tiering meets the damage in
// the sealed segment and leaves it local; and when the follower comes back,
// which cannot fetch the damaged batch, the leader still leads and serves.
// Before the fix the leader reported itself damaged, left the ISR and cut
// its log back to the damage, deleting every acknowledged record after it.
func TestDamageOnLastInSyncReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and stops one node")
	}
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: tieringArgs(t)})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	const db, name = "lastcopy", "events"
	if err := cl.Admin().CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: db, Name: name, Schema: logTableSchema,
		Buckets: 1, Replication: 2, Properties: map[string]string{"min.insync.replicas": "1",
			"log.segment.bytes": "64KiB", "log.local.segments": "1"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	waitISRFull(t, ctx, cl, db, name)
	view := func() bucketView {
		v, _ := viewBucket(ctx, c, pool, db, name) // a node just stopped answers nothing: look again
		return v
	}
	first := view()
	leader := c.Nodes[first.record.Leader-1]
	var follower *Node
	for _, id := range first.record.Replicas {
		if id != leader.ID {
			follower = c.Nodes[id-1]
		}
	}
	t.Logf("stopping follower node %d; leader node %d", follower.ID, leader.ID)
	c.Stop(follower)
	waitFor(t, 30*time.Second, "the ISR to shrink to the leader", func() bool {
		v := view().record
		return v != nil && slices.Equal(v.Isr, []uint32{leader.ID})
	})

	// The first batches go to the active segment; its first batch is
	// damaged there, before the segment is sealed and could be uploaded.
	appendPadded(t, ctx, tbl, 0, 20)
	segment := filepath.Join(leader.DataDir, "tablet", fmt.Sprintf("t%d-b0", tbl.ID()), fmt.Sprintf("%020d.log", 0))
	damagedEnd := flipPayloadByte(t, segment)
	t.Logf("damaged the batch [0, %d) in %s", damagedEnd, segment)
	const total = 1000
	appendPadded(t, ctx, tbl, 20, total) // seals the damaged segment and many after it

	// Tiering meets the damage when it verifies the sealed segment; the
	// leader keeps it local rather than reporting itself.
	waitFor(t, 30*time.Second, "a tiering round to meet the damaged segment", func() bool {
		return strings.Contains(readLog(t, leader), damageLastCopyLine)
	})

	// A consumer from the start gets CORRUPT for the damaged batch.
	if err := pollUntilError(t, ctx, tbl, client.Earliest()); !errors.Is(err, transport.ErrCorrupt) {
		t.Fatalf("reading the damaged batch: %v; want CORRUPT", err)
	}
	// Every acknowledged record after it is read from the next batch on.
	checkScanFrom(t, ctx, tbl, damagedEnd, total)

	// Several tiering rounds later the leader still leads in its epoch,
	// alone in the ISR, with its whole log: nothing cut, nothing uploaded
	// past the damage, nothing deleted locally on its strength.
	rounds := strings.Count(readLog(t, leader), damageLastCopyLine)
	waitFor(t, 30*time.Second, "three more tiering rounds over the damaged segment", func() bool {
		return strings.Count(readLog(t, leader), damageLastCopyLine) >= rounds+3
	})
	after := view()
	checkLastCopyKept(t, after, first, leader, total)
	if strings.Contains(readLog(t, leader), "cutting a damaged log back") {
		t.Fatalf("node %d cut its log, the only in-sync copy", leader.ID)
	}

	// The follower comes back: it cannot fetch the damaged batch from the
	// only copy, and the leader goes on leading, reading and writing.
	c.Restart(follower)
	c.WaitRegistered(60 * time.Second)
	// The follower asks for offset 0 at least once a second and is
	// answered CORRUPT (logged at debug level only): give it ten tiering
	// rounds, two seconds, of refusals.
	rounds = strings.Count(readLog(t, leader), damageLastCopyLine)
	waitFor(t, 30*time.Second, "ten tiering rounds with the follower back", func() bool {
		return strings.Count(readLog(t, leader), damageLastCopyLine) >= rounds+10
	})
	appendPadded(t, ctx, tbl, total, total+100)
	checkScanFrom(t, ctx, tbl, damagedEnd, total+100)
	checkLastCopyKept(t, view(), first, leader, total+100)
	for _, nd := range c.Nodes {
		if !nd.running() {
			t.Fatalf("node %d exited", nd.ID)
		}
	}
}

// flipPayloadByte flips a byte in the middle of the records of the first
// batch of the segment file at path and returns the offset after that
// batch (its header, untouched, says).
func flipPayloadByte(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := f.ReadAt(head, 0)
	batch, err := record.CheckHeader(head[:n])
	if err != nil || batch.Size() <= record.HeaderSize {
		t.Fatalf("no whole first batch in %s: %v", path, err)
	}
	at := int64(record.HeaderSize + (batch.Size()-record.HeaderSize)/2)
	b := []byte{head[at] ^ 0xff}
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	return batch.NextOffset()
}

// pollUntilError polls a scanner of bucket 0 from start until a fetch
// fails, and returns that error; the records it reads on the way are
// dropped.
func pollUntilError(t *testing.T, ctx context.Context, tbl *client.Table, start client.StartPosition) error {
	t.Helper()
	sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(0, start); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := sc.Poll(ctx)
		if err != nil {
			return err
		}
		t.Logf("read %d records before an error", len(recs))
	}
	t.Fatal("no error reading from the damaged batch within 30 s")
	return nil
}

// checkScanFrom reads bucket 0 from offset from up to its high watermark
// and checks it holds the ids [from, to) once each, at their offsets (the
// test's writers append ids in order from 0, one record per offset).
func checkScanFrom(t *testing.T, ctx context.Context, tbl *client.Table, from, to int64) {
	t.Helper()
	recs := scanBucketFrom(t, ctx, tbl, from)
	if int64(len(recs)) != to-from {
		t.Fatalf("read %d records from offset %d, want %d", len(recs), from, to-from)
	}
	for _, r := range recs {
		if r.id != r.offset {
			t.Fatalf("offset %d holds id %d", r.offset, r.id)
		}
	}
}

// scanBucketFrom reads bucket 0 from offset from up to its high
// watermark, checking offsets rise without gaps.
func scanBucketFrom(t *testing.T, ctx context.Context, tbl *client.Table, from int64) []scanned {
	t.Helper()
	sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.Subscribe(0, client.AtOffset(from)); err != nil {
		t.Fatal(err)
	}
	schema := tbl.Schema()
	var out []scanned
	next := from
	deadline := time.Now().Add(60 * time.Second)
	for {
		if hw, ok := sc.HighWatermark(0); ok && next >= hw {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("scan from %d did not reach the high watermark: at %d", from, next)
		}
		recs, err := sc.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != next {
				t.Fatalf("offset %d after %d", r.Offset, next-1)
			}
			next = r.Offset + 1
			out = append(out, scanned{bucket: r.Bucket, offset: r.Offset, id: record.NewRowView(schema, r.Row).Int64(0)})
		}
	}
}

// checkLastCopyKept checks that the damaged leader still leads in the
// epoch it led in at first, alone in the ISR, with its whole log [0, end)
// and nothing in remote storage.
func checkLastCopyKept(t *testing.T, v, first bucketView, leader *Node, end int64) {
	t.Helper()
	r := v.record
	if r == nil || r.Leader != leader.ID || r.LeaderEpoch != first.record.LeaderEpoch || !slices.Equal(r.Isr, []uint32{leader.ID}) {
		t.Fatalf("bucket %v; want node %d leading in epoch %d, alone in the ISR", r, leader.ID, first.record.LeaderEpoch)
	}
	if v.localStart != 0 || v.hw != end {
		t.Fatalf("the leader's log is [%d, %d), want [0, %d): the only copy was cut", v.localStart, v.hw, end)
	}
	if r.GetRemoteLog().GetEndOffset() != 0 {
		t.Fatalf("remote log %v holds data past the damaged batch at offset 0", r.GetRemoteLog())
	}
}
