package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// lakeState reads a table's record and buckets on any live meta node.
func lakeState(ctx context.Context, c *Cluster, pool *transport.Pool, db, name string) (*pb.GetTableResponse, error) {
	var lastErr error
	for _, nd := range c.Nodes {
		if !nd.running() {
			continue
		}
		resp, err := pb.NewDRPCMetaClient(pool.Conn(nd.Addr)).GetTable(ctx, &pb.GetTableRequest{Database: db, Name: name})
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// lakeOffsets reads, per bucket, the log offset the lake's current
// version holds records below, and the high watermarks of the leaders.
func lakeRecords(ctx context.Context, lt *lake.Table, physical uint64, buckets int32) (map[int32]int64, error) {
	m, _, err := lt.ReadCurrent(ctx)
	if err != nil {
		return nil, err
	}
	offsets, err := lake.ParseLogOffsets(m.CurrentSnapshot().Summary[lake.SummaryLogOffsets])
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for b := range buckets {
		out[b] = offsets[fmt.Sprintf("%d/%d", physical, b)]
	}
	return out, nil
}

// lakeOffsetsSeen reads every data file of the lake's current snapshot
// and returns, per bucket, how many times each offset appears.
func lakeOffsetsSeen(t *testing.T, ctx context.Context, store tiering.ObjectStore, lt *lake.Table) map[int32]map[int64]int {
	t.Helper()
	seen := map[int32]map[int64]int{}
	for _, r := range lakeRowsSeen(t, ctx, store, lt) {
		if seen[r.bucket] == nil {
			seen[r.bucket] = map[int64]int{}
		}
		seen[r.bucket][r.offset]++
	}
	return seen
}

// lakeRow is a row of a lake data file of logTableSchema.
type lakeRow struct {
	bucket     int32
	offset, id int64
	v          int64 // the BIGINT column v, when the table has one
}

// lakeRowsSeen reads every data file of the lake's current snapshot, as
// an engine reading the files it lists would, and returns their rows.
func lakeRowsSeen(t *testing.T, ctx context.Context, store tiering.ObjectStore, lt *lake.Table) []lakeRow {
	t.Helper()
	m, _, err := lt.ReadCurrent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := lt.ReadManifestList(ctx, m.CurrentSnapshot().ManifestList)
	if err != nil {
		t.Fatal(err)
	}
	var out []lakeRow
	for _, mf := range manifests {
		entries, err := lt.ReadManifest(ctx, mf.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.Live() {
				continue // replaced by a merged file
			}
			key, ok := strings.CutPrefix(e.File.Path, strings.TrimSuffix(store.String(), "/")+"/")
			if !ok {
				t.Fatalf("data file %s is not in %s", e.File.Path, store)
			}
			rc, err := store.Get(ctx, key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			pf, err := file.NewParquetReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := fr.ReadTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			bi, oi := tb.Schema().FieldIndices(lake.BucketColumn), tb.Schema().FieldIndices(lake.OffsetColumn)
			ii, vi := tb.Schema().FieldIndices("id"), tb.Schema().FieldIndices("v")
			for c := range tb.Column(bi[0]).Data().Chunks() {
				buckets := tb.Column(bi[0]).Data().Chunk(c).(*array.Int32)
				offsets := tb.Column(oi[0]).Data().Chunk(c).(*array.Int64)
				ids := tb.Column(ii[0]).Data().Chunk(c).(*array.Int64)
				for i := range buckets.Len() {
					r := lakeRow{bucket: buckets.Value(i), offset: offsets.Value(i), id: ids.Value(i)}
					if len(vi) == 1 {
						r.v = tb.Column(vi[0]).Data().Chunk(c).(*array.Int64).Value(i)
					}
					out = append(out, r)
				}
			}
			tb.Release()
		}
	}
	return out
}

// TestLakeAcrossKills: a lake-enabled table keeps tiering while the node
// running a lake task is SIGKILLed (its task goes to another node) and
// comes back; in the end the lake holds every record of every bucket's
// log exactly once, however many rounds were cut short or lost the race.
func TestLakeAcrossKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and kills a node")
	}
	remote := filepath.Join(t.TempDir(), "remote")
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remote, "--tiering-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	const buckets = 3
	if err := cl.Admin().CreateDatabase(ctx, "lk", client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "lk", Name: "events", Schema: logTableSchema, Buckets: buckets,
		Replication: 3, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, "lk", "events")
	if err != nil {
		t.Fatal(err)
	}
	store, err := tiering.NewFolder(remote)
	if err != nil {
		t.Fatal(err)
	}
	lt := lake.NewTable(store, fmt.Sprintf("lake/lk/events-%d", tbl.TableID()))
	write := func(from, to int64) {
		w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close(ctx)
		for i := from; i < to; i++ {
			if _, err := w.Append(ctx, encodeRow(t, tbl, i, noise(i, 200))); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// caughtUp: the lake's offsets are the buckets' high watermarks.
	caughtUp := func() bool {
		resp, err := lakeState(ctx, c, pool, "lk", "events")
		if err != nil {
			return false
		}
		have, err := lakeRecords(ctx, lt, tbl.TableID(), buckets)
		if err != nil {
			return false
		}
		for _, b := range resp.GetBuckets() {
			hw, err := tbl.ListOffset(ctx, b.GetBucket(), client.Latest())
			if err != nil || have[b.GetBucket()] != hw || b.GetLakeOffset() != hw {
				return false
			}
		}
		return true
	}

	write(0, 3000)
	waitFor(t, 60*time.Second, "the lake to hold the first records", caughtUp)
	resp, err := lakeState(ctx, c, pool, "lk", "events")
	if err != nil {
		t.Fatal(err)
	}
	victim := c.Nodes[resp.GetTable().GetLake().GetTasks()[0].GetNodeId()-1]
	t.Logf("killing node %d, which runs lake task 0", victim.ID)
	c.Kill(victim)
	write(3000, 6000)
	waitFor(t, 90*time.Second, "the lake to catch up without the killed node", func() bool {
		resp, err := lakeState(ctx, c, pool, "lk", "events")
		return err == nil && resp.GetTable().GetLake().GetTasks()[0].GetNodeId() != victim.ID && caughtUp()
	})
	c.Restart(victim)
	write(6000, 8000)
	waitFor(t, 90*time.Second, "the lake to hold every record", caughtUp)

	seen := lakeOffsetsSeen(t, ctx, store, lt)
	var total int64
	for b := range int32(buckets) {
		hw, err := tbl.ListOffset(ctx, b, client.Latest())
		if err != nil {
			t.Fatal(err)
		}
		for off := range hw {
			if n := seen[b][off]; n != 1 {
				t.Fatalf("bucket %d offset %d is in the lake %d times", b, off, n)
			}
		}
		if len(seen[b]) != int(hw) {
			t.Fatalf("bucket %d: the lake holds %d offsets, its log %d", b, len(seen[b]), hw)
		}
		total += hw
	}
	if total < 8000 {
		t.Fatalf("the logs hold %d records, 8000 were acknowledged", total)
	}
}

// TestLakeUnionReadAcrossLeaderMoves: a scanner from Earliest reads a
// lake-enabled table whose log has let its first records go (the lake
// holding them) while writes go on and tiering runs, and while the leader
// of a bucket it is reading from the lake is SIGKILLed: it goes on from
// the new leader, and in the end has read every acknowledged row once,
// at contiguous offsets per bucket.
func TestLakeUnionReadAcrossLeaderMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and kills a node")
	}
	remote := filepath.Join(t.TempDir(), "remote")
	c := StartCluster(t, 3, ClusterOptions{ExtraArgs: []string{"--remote-dir", remote, "--tiering-interval", "200ms"}})
	ctx := t.Context()
	cl := c.Client(ctx)
	const buckets = 3
	if err := cl.Admin().CreateDatabase(ctx, "lk", client.IfNotExists()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "lk", Name: "union", Schema: logTableSchema, Buckets: buckets,
		Replication: 3, Properties: map[string]string{"datalake.enabled": "true", "datalake.freshness": "1s",
			"log.ttl": "1s", "log.segment.bytes": "64KiB"}}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.Table(ctx, "lk", "union")
	if err != nil {
		t.Fatal(err)
	}
	write := func(from, to int64) {
		w, err := tbl.NewAppendWriter(client.AppendWriterOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close(context.WithoutCancel(ctx))
		for i := from; i < to; i++ {
			if _, err := w.Append(ctx, encodeRow(t, tbl, i, noise(i, 500))); err != nil {
				t.Error(err)
				return
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Error(err)
		}
	}
	write(0, 3000)
	waitFor(t, 90*time.Second, "every bucket's log to let records go into the lake", func() bool {
		for b := range int32(buckets) {
			inLog, err := tbl.ListOffset(ctx, b, client.EarliestInLog())
			if err != nil || inLog < 200 {
				return false
			}
			if first, err := tbl.ListOffset(ctx, b, client.Earliest()); err != nil || first != 0 {
				return false
			}
		}
		return true
	})
	// The writes go on while the scanner reads, and the lake tiers them.
	more := make(chan struct{})
	go func() {
		defer close(more)
		write(3000, 4000)
	}()
	s, err := tbl.NewLogScanner(client.LogScannerOptions{MaxBytes: 64 << 10}) // small fetches: many of them from the lake
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for b := range int32(buckets) {
		if err := s.Subscribe(b, client.Earliest()); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int64]bool{}
	next := map[int32]int64{}
	killed := false
	deadline := time.Now().Add(3 * time.Minute)
	for len(seen) < 4000 {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of 4000 rows; next offsets %v", len(seen), next)
		}
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != next[r.Bucket] {
				t.Fatalf("bucket %d: offset %d after %d", r.Bucket, r.Offset, next[r.Bucket]-1)
			}
			next[r.Bucket]++
			id := record.NewRowView(tbl.Schema(), r.Row).Int64(0)
			if seen[id] {
				t.Fatalf("row %d read twice (bucket %d offset %d)", id, r.Bucket, r.Offset)
			}
			seen[id] = true
		}
		if !killed && len(recs) > 0 && len(seen) < 1000 {
			// The scanner is in the lake: kill the leader of a bucket
			// it reads.
			info, err := cl.Admin().DescribeTable(ctx, "lk", "union")
			if err != nil {
				t.Fatal(err)
			}
			victim := c.Nodes[info.Placement[recs[0].Bucket].Leader-1]
			t.Logf("killing node %d, the leader of bucket %d, at offset %d", victim.ID, recs[0].Bucket, next[recs[0].Bucket])
			c.Kill(victim)
			killed = true
			defer c.Restart(victim)
		}
	}
	<-more
	if !killed {
		t.Fatal("the scanner read past the lake before a leader was killed")
	}
}
