package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/transport"
)

// remoteCutLine is what a leader logs when its tiering round cuts a
// remote log fenced by an unclean election.
const remoteCutLine = "cutting the remote log after an unclean election"

// TestUncleanElectionOverTieredLog (issue 30, remote storage 6): a bucket
// of two replicas tiers its log. Its follower B is stopped; the leader A
// goes on alone (min.insync.replicas=1) and uploads segments past B's end;
// then A is killed, and an unclean election makes B the leader of a new
// history whose offsets from B's end on hold other records than A's
// uploaded segments. B's tiering round must cut the remote log where the
// two part before anything relies on it; then B uploads its own segments
// and its local retention deletes them. Read back from offset 0, through
// the remote log and B's local tail, every offset holds B's history: the
// shared prefix and each record acknowledged after the election, at the
// offset its producer was told. Without the fence B deleted its new
// records below A's remote end and readers got A's records there.
func TestUncleanElectionOverTieredLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster, stops one node and kills another")
	}
	remoteDir := filepath.Join(t.TempDir(), "remote")
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remoteDir, "--tiering-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	const db, name = "unclean", "events"
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
	a := c.Nodes[first.record.Leader-1]
	var b *Node
	for _, id := range first.record.Replicas {
		if id != a.ID {
			b = c.Nodes[id-1]
		}
	}

	// Both replicas hold [0, 1000); A uploads part of it.
	const shared = 1000
	appendPadded(t, ctx, tbl, 0, shared)
	waitFor(t, 30*time.Second, "A to upload segments", func() bool {
		return view().record.GetRemoteLog().GetEndOffset() > 0
	})
	bEpoch := nodeEpochOf(ctx, cl, b.ID)
	t.Logf("stopping node %d (B); node %d (A) leads on alone", b.ID, a.ID)
	c.Stop(b)
	waitFor(t, 30*time.Second, "the ISR to shrink to A", func() bool {
		v := view().record
		return v != nil && slices.Equal(v.Isr, []uint32{a.ID})
	})
	// A's history goes on to 2500, and its remote log well past B's end.
	const aEnd = 2500
	appendPadded(t, ctx, tbl, shared, aEnd)
	waitFor(t, 30*time.Second, "A to upload segments past B's end", func() bool {
		return view().record.GetRemoteLog().GetEndOffset() >= 2000
	})
	old := view().record
	t.Logf("killing node %d (A): remote log %v", a.ID, old.GetRemoteLog())
	c.Kill(a)

	// B comes back (with the third node, a metadata quorum again) out of
	// the ISR, and only an unclean election makes it lead.
	c.Restart(b)
	// Its new registration would elect again (a restarted leader leads in
	// a new epoch): elect once it is in.
	waitFor(t, 60*time.Second, "B to register again", func() bool { return nodeEpochOf(ctx, cl, b.ID) > bEpoch })
	var elected client.Election
	waitFor(t, 60*time.Second, "an unclean election to pick B", func() bool {
		els, err := cl.Admin().ElectLeaders(ctx, db, name, client.ElectOptions{Unclean: true})
		if err != nil || len(els) != 1 || !els[0].Elected {
			return false
		}
		elected = els[0]
		return true
	})
	if elected.Bucket.Leader != b.ID || !elected.Unclean {
		t.Fatalf("election: %+v; want node %d from outside the ISR", elected, b.ID)
	}
	t.Logf("node %d (B) leads in epoch %d", b.ID, elected.Bucket.LeaderEpoch)

	// B's history: the records acknowledged after the election, at the
	// offsets the producer was told. The first goes alone, and short: B's
	// segment holding its log end then need not roll where A's did (A's
	// next batch was a full one), as the batches of a new history differ.
	const written = 2500
	offsets := appendRecorded(t, ctx, tbl, 100_000, 1, 1)
	offsets = append(offsets, appendRecorded(t, ctx, tbl, 100_001, written-1, 1000)...)
	newFirst := slices.Min(offsets)
	if newFirst < shared {
		t.Fatalf("B wrote from offset %d, inside the %d records it held", newFirst, shared)
	}

	// B's round cuts the fenced remote log, then uploads its own segments,
	// and its local retention deletes what they hold.
	waitFor(t, 60*time.Second, "B to cut the remote log, upload past its new records and delete them locally", func() bool {
		v := view()
		rl := v.record.GetRemoteLog()
		return v.record.GetLeader() == b.ID && v.record.GetRemoteFenceEpoch() == 0 &&
			rl.GetLeaderEpoch() == v.record.GetLeaderEpoch() && rl.GetEndOffset() > newFirst+written/2 &&
			v.localStart > newFirst+written/2
	})
	// From offset 0: the shared prefix, then B's records where the
	// producer put them; never one of A's lost records.
	want := map[int64]int64{}
	for i, off := range offsets {
		want[off] = 100_000 + int64(i)
	}
	recs := scanAll(t, ctx, tbl, 1)
	for _, r := range recs {
		switch id, ok := want[r.offset]; {
		case ok && r.id != id:
			t.Fatalf("offset %d holds id %d; B's producer was told it holds id %d", r.offset, r.id, id)
		case !ok && r.offset >= newFirst:
			t.Fatalf("offset %d holds id %d, which B never acknowledged there", r.offset, r.id)
		case !ok && r.id != r.offset:
			t.Fatalf("offset %d of the shared prefix holds id %d", r.offset, r.id)
		}
	}
	if end := newFirst + written; int64(len(recs)) != end {
		t.Fatalf("read %d records from 0, want %d", len(recs), end)
	}
	t.Logf("read [0, %d): the shared prefix [0, %d) and B's %d records", len(recs), newFirst, written)

	// The remote log was cut where B's history parts from A's, and its
	// manifest mixes no segment of the two.
	if line := logLine(readLog(t, b), remoteCutLine); line == "" {
		t.Fatalf("node %d never cut the remote log", b.ID)
	} else {
		t.Logf("node %d: %s", b.ID, line)
	}
	checkManifestHistories(t, remoteDir, view().record.GetRemoteLog().GetManifestKey(), newFirst, old.LeaderEpoch)
}

// appendRecorded appends n rows with ids firstID, firstID+1, ... and
// payload of padLen noise characters, and returns the offset the leader acknowledged each at.
func appendRecorded(t *testing.T, ctx context.Context, tbl *client.Table, firstID int64, n int, padLen int) []int64 {
	t.Helper()
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	futs := make([]*client.AppendFuture, n)
	for i := range n {
		if futs[i], err = w.Append(ctx, encodeRow(t, tbl, firstID+int64(i), noise(firstID+int64(i), padLen))); err != nil {
			t.Fatal(err)
		}
	}
	offsets := make([]int64, n)
	for i, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		offsets[i] = res.Offset
	}
	return offsets
}

// nodeEpochOf returns the node epoch of node id's registration (0 until
// the metadata answers).
func nodeEpochOf(ctx context.Context, cl *client.Client, id uint32) uint64 {
	st, err := cl.Admin().ClusterStatus(ctx)
	if err != nil {
		return 0
	}
	for _, n := range st.Nodes {
		if n.ID == id && n.Alive {
			return n.NodeEpoch
		}
	}
	return 0
}

// logLine returns the first line of log that contains s, "" if none.
func logLine(log, s string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// checkManifestHistories reads the committed manifest from the remote
// folder and checks that it serves no offset from the old history past
// the point where the new one starts: every span of a segment in an epoch
// up to oldEpoch (the old leader's) ends by from, every span in a later
// one starts at or after it. (A segment of the new leader may start in
// the shared prefix, in the old epoch, and go on in its own.)
func checkManifestHistories(t *testing.T, remoteDir, key string, from int64, oldEpoch int32) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(remoteDir, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := tiering.DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.Segments {
		for i, e := range s.Epochs {
			end := s.NextOffset
			if i+1 < len(s.Epochs) {
				end = s.Epochs[i+1].StartOffset
			}
			if (e.Epoch <= oldEpoch && end > from) || (e.Epoch > oldEpoch && e.StartOffset < from) {
				t.Fatalf("remote segment [%d, %d) with epochs %v serves [%d, %d) in epoch %d across the new history's start %d (old epochs up to %d)",
					s.BaseOffset, s.NextOffset, s.Epochs, e.StartOffset, end, e.Epoch, from, oldEpoch)
			}
		}
	}
	t.Logf("manifest %s: %d segments [%d, %d), the new history's from %d", key, len(m.Segments), m.Start(), m.End(), from)
}
