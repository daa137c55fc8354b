package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
)

// Moving a tiered bucket (docs/operations.md, moving replicas): a learner
// with an empty log starts at its leader's local log start, since remote
// storage holds what lies below, so a move copies the bucket's local tail,
// at most tieredMoveMaxRatio times its leader's local bytes, plus, for a
// primary-key bucket, the newest KV snapshot the learner restores first.
// Each test runs two nodes sharing one remote folder and a table of one
// bucket of replication 1, moved to the node that does not hold it.

// Sizes of the tiered move tests: segments of tieredMoveSegmentBytes, of
// which the leader keeps tieredMoveLocalSegments sealed ones (and its
// active one) once remote storage holds them, so the local tail is a few
// hundred KiB of a bucket of several MB.
const (
	tieredMoveSegmentBytes  = 256 << 10
	tieredMoveLocalSegments = 2
	// tieredMoveMaxRatio bounds the bytes a move copies, as a multiple of
	// the leader's local log bytes (the target).
	tieredMoveMaxRatio = 1.2
	// tieredMoveRows rows of about 1 KB: the log table's content.
	tieredMoveRows = 15000
	// tieredKVKeys keys of about 250 bytes, written tieredKVRounds times:
	// the primary-key table's changelog (a -U and a +U per update).
	tieredKVKeys   = 3000
	tieredKVRounds = 3
	// tieredKVTailKeys keys are updated once more after the KV snapshot:
	// a changelog well under one segment, so the leader still holds all
	// of it locally when the move starts.
	tieredKVTailKeys = 300
)

// tieredTable is the table of the tiered move tests, in a database of
// each test's name.
const tieredTable = "events"

// tieredMoveFixture is a cluster of two nodes (each with /metrics) that
// tier to one shared folder, and its tiered table of one bucket of
// replication 1.
type tieredMoveFixture struct {
	t    *testing.T
	c    *Cluster
	cl   *client.Client
	tbl  *client.Table
	pool *transport.Pool
	db   string
	// httpAddr is each node's /metrics address, by node id.
	httpAddr map[uint32]string
}

// startTieredMove starts the cluster and creates the table: a log table,
// or with primaryKey a primary-key table whose KV snapshots are taken
// only when the test asks (and once at its first write).
func startTieredMove(t *testing.T, db string, primaryKey bool) *tieredMoveFixture {
	t.Helper()
	httpAddr := map[uint32]string{}
	nodeArgs := map[uint32][]string{}
	for id := uint32(1); id <= 2; id++ {
		httpAddr[id] = freeAddr(t)
		nodeArgs[id] = []string{"--http", httpAddr[id]}
	}
	c := StartCluster(t, 2, ClusterOptions{ExtraArgs: tieringArgs(t), NodeArgs: nodeArgs})
	ctx := t.Context()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, db); err != nil {
		t.Fatal(err)
	}
	spec := client.TableSpec{Database: db, Name: tieredTable, Schema: logTableSchema, Buckets: 1, Replication: 1,
		Properties: map[string]string{
			"log.segment.bytes":  strconv.Itoa(tieredMoveSegmentBytes),
			"log.local.segments": strconv.Itoa(tieredMoveLocalSegments)}}
	if primaryKey {
		spec.Schema, spec.PrimaryKey = kvClientSchema, []string{"a", "b"}
		spec.Properties["kv.snapshot.interval"] = "1h"
	}
	if _, err := cl.Admin().CreateTable(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, db, tieredTable)
	if err != nil {
		t.Fatal(err)
	}
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { pool.Close() })
	waitISRFull(t, ctx, cl, db, tieredTable)
	return &tieredMoveFixture{t: t, c: c, cl: cl, tbl: tbl, pool: pool, db: db, httpAddr: httpAddr}
}

// node is the node of id.
func (f *tieredMoveFixture) node(id uint32) *Node { return f.c.Nodes[id-1] }

// replicaDir is the folder of the bucket's replica on nd.
func (f *tieredMoveFixture) replicaDir(nd *Node) string {
	return filepath.Join(nd.DataDir, "tablet", fmt.Sprintf("t%d-b0", f.tbl.ID()))
}

// view is bucket 0 as the metadata and its leader say.
func (f *tieredMoveFixture) view() (bucketView, error) {
	return viewBucket(f.t.Context(), f.c, f.pool, f.db, tieredTable)
}

// waitLocalTail waits until the leader holds only the bucket's local
// tail: every sealed segment is in remote storage (the remote log ends
// where the active segment starts), and retention deleted all but
// tieredMoveLocalSegments of them (the local log starts past 0, where the
// remote log holds what lies below).
func (f *tieredMoveFixture) waitLocalTail() bucketView {
	f.t.Helper()
	var v bucketView
	waitFor(f.t, 60*time.Second, "the leader to keep only its local tail, the rest in remote storage", func() bool {
		var err error
		v, err = f.view()
		if err != nil || v.record == nil || v.record.Leader == 0 {
			return false
		}
		bases := segmentBases(f.t, f.replicaDir(f.node(v.record.Leader)))
		return v.localStart > 0 && len(bases) > 0 && len(bases) <= tieredMoveLocalSegments+1 && bases[0] == v.localStart &&
			v.record.GetRemoteLog().GetEndOffset() == bases[len(bases)-1]
	})
	return v
}

// metric reads one series of nd's /metrics.
func (f *tieredMoveFixture) metric(nd *Node, series string) int64 {
	f.t.Helper()
	v, err := metricValue(f.t.Context(), f.httpAddr[nd.ID], series)
	if err != nil {
		f.t.Fatalf("node %d: %v", nd.ID, err)
	}
	return int64(v)
}

// logBytes is floe_log_bytes of the table on nd: the bytes of its local
// log segments.
func (f *tieredMoveFixture) logBytes(nd *Node) int64 {
	return f.metric(nd, fmt.Sprintf("floe_log_bytes{table=%q}", f.db+"."+tieredTable))
}

// moveBytes is floe_move_bytes_total on nd: what the replicas moves added
// there copied.
func (f *tieredMoveFixture) moveBytes(nd *Node) int64 { return f.metric(nd, "floe_move_bytes_total") }

// moveToSpare moves the bucket off its only replica to the other node
// with no throttle, waits until the move completed (the new replica
// alone, leading, no move running) and the old replica deleted its copy,
// and returns the new replica's node.
func (f *tieredMoveFixture) moveToSpare() *Node {
	f.t.Helper()
	ctx := f.t.Context()
	desc, err := f.cl.Admin().DescribeTable(ctx, f.db, tieredTable)
	if err != nil {
		f.t.Fatal(err)
	}
	old := f.node(desc.Placement[0].Leader)
	spare := f.node(3 - old.ID)
	target := []uint32{spare.ID}
	res, err := f.cl.Admin().MoveReplicas(ctx, []client.BucketMove{{Database: f.db, Table: tieredTable, Replicas: target}},
		client.MoveOptions{ThrottleBytesPerS: -1})
	if err != nil || len(res.Started) != 1 {
		f.t.Fatalf("move to node %d did not start: %+v, %v", spare.ID, res, err)
	}
	waitFor(f.t, 60*time.Second, fmt.Sprintf("the bucket on node %d alone, leading, no move running", spare.ID), func() bool {
		desc, err := f.cl.Admin().DescribeTable(ctx, f.db, tieredTable)
		if err != nil {
			return false
		}
		b := desc.Placement[0]
		if !slices.Equal(b.Replicas, target) || !slices.Equal(b.ISR, target) || b.Leader != spare.ID {
			return false
		}
		st, err := f.cl.Admin().MoveStatus(ctx)
		return err == nil && len(st.Running) == 0 && len(st.Queued) == 0
	})
	waitFor(f.t, 30*time.Second, fmt.Sprintf("node %d to delete its replica folder (moved off)", old.ID), func() bool {
		_, err := os.Stat(f.replicaDir(old))
		return errors.Is(err, fs.ErrNotExist)
	})
	return spare
}

// checkRatio fails unless moved is at most tieredMoveMaxRatio times the
// leader's local bytes, and more than half of least, the bytes the new
// replica had to copy, so the bound cannot hold vacuously.
func (f *tieredMoveFixture) checkRatio(moved, local, least int64) {
	f.t.Helper()
	if moved > int64(tieredMoveMaxRatio*float64(local)) {
		f.t.Fatalf("the move copied %d bytes, more than %.1f× the leader's %d local bytes", moved, tieredMoveMaxRatio, local)
	}
	if moved <= least/2 {
		f.t.Fatalf("the move copied %d bytes, not even half of the %d the new replica needed: is floe_move_bytes_total counted?",
			moved, least)
	}
}

// TestMoveTieredBucketCopiesTheLocalTail: a log bucket of several MB,
// all but its local tail in remote storage, moves to a node that never
// held it. The learner starts at the leader's local log start and copies
// that tail only: the bytes it copied (floe_move_bytes_total) are about
// the leader's local bytes, far below the bucket's. The moved replica,
// now the only one, serves the whole table from the earliest offset
// (remote storage, then its log), every record once and in order.
func TestMoveTieredBucketCopiesTheLocalTail(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 2-node cluster and writes 15 MB")
	}
	f := startTieredMove(t, "tiermove", false)
	appendPadded(t, t.Context(), f.tbl, 0, tieredMoveRows)
	before := f.waitLocalTail()
	leader := f.node(before.record.Leader)
	local := f.logBytes(leader)
	remote := before.record.GetRemoteLog()

	spare := f.moveToSpare()
	moved := f.moveBytes(spare)
	t.Logf("moved %d bytes, local %d bytes, remote %d bytes, ratio %.3f (node %d → node %d; local log [%d, %d), remote log [%d, %d))",
		moved, local, remote.GetBytes(), float64(moved)/float64(local), leader.ID, spare.ID,
		before.localStart, before.hw, remote.GetStartOffset(), remote.GetEndOffset())
	if remote.GetBytes() < 10*local {
		t.Fatalf("remote storage holds %d bytes, the local tail %d: too little tiered for the test to tell", remote.GetBytes(), local)
	}
	f.checkRatio(moved, local, local)
	if bases := segmentBases(t, f.replicaDir(spare)); len(bases) == 0 || bases[0] < before.localStart {
		t.Fatalf("the moved replica's log starts at %v, below the old leader's local start %d: it copied from remote storage",
			bases[:min(len(bases), 1)], before.localStart)
	}

	waitHWSettled(t, t.Context(), f.cl, f.db, tieredTable)
	records := scanAll(t, t.Context(), f.tbl, 1)
	for i, r := range records {
		if r.id != int64(i) {
			t.Fatalf("offset %d holds id %d, want %d: a record lost, doubled or out of order", r.offset, r.id, i)
		}
	}
	if len(records) != tieredMoveRows {
		t.Fatalf("%d records read from node %d and remote storage, %d written", len(records), spare.ID, tieredMoveRows)
	}
	t.Logf("read back %d records from the earliest offset, each once and in order", len(records))
}

// TestMoveTieredKVBucket: a primary-key bucket whose changelog is mostly
// in remote storage, with a KV snapshot taken after tiering and a few
// updates after it, moves to a node that never held it. The learner
// restores the snapshot and replays only the changelog after it: the
// bytes it copied besides the snapshot are at most the leader's local
// bytes (and more than half of the changelog after the snapshot). The
// moved replica, now the leader, serves every key with its last value,
// those written after the snapshot included.
func TestMoveTieredKVBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 2-node cluster and writes a few MB of changelog")
	}
	f := startTieredMove(t, "tierkv", true)
	ctx := t.Context()
	for round := range tieredKVRounds {
		upsertKeys(t, f.tbl, 0, tieredKVKeys, round)
	}
	f.waitLocalTail()
	snap, err := f.tbl.SnapshotKV(ctx, 0)
	if err != nil {
		t.Fatalf("KV snapshot: %v", err)
	}
	upsertKeys(t, f.tbl, 0, tieredKVTailKeys, tieredKVRounds)
	before, err := f.view()
	if err != nil {
		t.Fatal(err)
	}
	if before.localStart > snap.Offset || snap.Offset >= before.hw {
		t.Fatalf("the snapshot at %d is not within the leader's local log [%d, %d): the test's sizes do not fit",
			snap.Offset, before.localStart, before.hw)
	}
	leader := f.node(before.record.Leader)
	local := f.logBytes(leader)
	remote := before.record.GetRemoteLog()

	spare := f.moveToSpare()
	moved := f.moveBytes(spare)
	after, err := f.view()
	if err != nil {
		t.Fatal(err)
	}
	replayed := f.logBytes(spare)
	t.Logf("moved %d bytes of changelog and a KV snapshot of %d bytes (%d rows, at offset %d); local %d bytes, remote %d bytes, "+
		"ratio %.3f of the local bytes (node %d → node %d; the new replica's log [%d, %d), %d bytes)",
		moved, snap.Bytes, snap.Rows, snap.Offset, local, remote.GetBytes(), float64(moved)/float64(local), leader.ID, spare.ID,
		after.localStart, after.hw, replayed)
	if !strings.Contains(readLog(t, spare), "restored KV store from a snapshot") || after.localStart != snap.Offset {
		t.Fatalf("node %d's log starts at %d, not at the snapshot's offset %d, or it did not log a restore", spare.ID,
			after.localStart, snap.Offset)
	}
	f.checkRatio(moved, local, replayed)

	l, err := f.tbl.NewLookuper(client.LookuperOptions{Linearizable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rows, err := l.LookupBatch(ctx, kvClientKeys(t, f.tbl, tieredKVKeys))
	if err != nil {
		t.Fatalf("lookups on node %d: %v", spare.ID, err)
	}
	for a, row := range rows {
		round := tieredKVRounds - 1
		if a < tieredKVTailKeys {
			round = tieredKVRounds
		}
		if row == nil || record.NewRowView(f.tbl.Schema(), row).Int64(3) != int64(round*tieredKVKeys+a) {
			t.Fatalf("key %d on node %d: %s, want v=%d", a, spare.ID, rowJSONOf(t, f.tbl, row), round*tieredKVKeys+a)
		}
	}
}

// upsertKeys writes keys {a, "k"} for a in [from, to) with v =
// round*tieredKVKeys+a and a 200-byte name, and waits for every ack.
func upsertKeys(t *testing.T, tbl *client.Table, from, to, round int) {
	t.Helper()
	ctx := t.Context()
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	pad := strings.Repeat("s", 200)
	var futures []*client.UpsertFuture
	for a := from; a < to; a++ {
		fut, err := w.UpsertJSON(ctx, fmt.Appendf(nil, `{"a":%d,"b":"k","name":"%s","v":%d}`, a, pad, round*tieredKVKeys+a))
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

// metricValue reads one series of a node's /metrics, named as the text
// format prints it (name and labels, e.g. floe_log_bytes{table="db.t"}).
func metricValue(ctx context.Context, httpAddr, series string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in the /metrics of %s", series, httpAddr)
}
