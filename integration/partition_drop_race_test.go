package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// raceAppend is one append of the racing writer and its outcome.
type raceAppend struct {
	id  int64
	dt  string
	fut *client.AppendFuture // nil when Append itself failed
	err error                // Append's, or the future's once waited
}

// raceWriter appends rows without pause, acks=all, to a partitioned log
// table: ids from 0 up, every fourth to dt=cold, the others to dt=hot. It
// keeps at most raceWindow rows unacknowledged.
type raceWriter struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	appends []*raceAppend
	acked   map[string]int // acknowledged rows by dt, so far
	err     error          // the first outcome of no allowed class
}

const raceWindow = 200

// raceWait bounds the wait for one append's outcome: more is a hang.
const raceWait = 30 * time.Second

func startRaceWriter(t *testing.T, tbl *client.Table) *raceWriter {
	rw := &raceWriter{stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]int{}}
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll, DeliveryTimeout: raceWait})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(rw.done)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), raceWait)
			defer cancel()
			w.Close(ctx)
		}()
		for id := int64(0); ; id++ {
			select {
			case <-rw.stop:
				rw.waitAll()
				return
			default:
			}
			dt := "hot"
			if id%4 == 0 {
				dt = "cold"
			}
			a := &raceAppend{id: id, dt: dt}
			row, err := encodePartRow(tbl, dt, id, noise(id, 200))
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), raceWait)
				a.fut, err = w.Append(ctx, row)
				cancel()
			}
			a.err = err
			rw.mu.Lock()
			rw.appends = append(rw.appends, a)
			rw.mu.Unlock()
			if a.fut == nil {
				rw.note(a)
			}
			if id >= raceWindow {
				rw.waitOne(int(id) - raceWindow)
			}
		}
	}()
	return rw
}

// waitOne waits for the outcome of append i, unless it is known.
func (rw *raceWriter) waitOne(i int) {
	rw.mu.Lock()
	a := rw.appends[i]
	fut := a.fut
	rw.mu.Unlock()
	if fut == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), raceWait)
	_, err := fut.Wait(ctx)
	cancel()
	rw.mu.Lock()
	a.err, a.fut = err, nil
	rw.mu.Unlock()
	rw.note(a)
}

// waitAll waits for the outcome of every append.
func (rw *raceWriter) waitAll() {
	rw.mu.Lock()
	n := len(rw.appends)
	rw.mu.Unlock()
	for i := range n {
		rw.waitOne(i)
	}
}

// note records an outcome: an acknowledgment, a failure with
// ErrUnknownPartition, or any other error, which fails the test.
func (rw *raceWriter) note(a *raceAppend) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	switch {
	case a.err == nil:
		rw.acked[a.dt]++
	case errors.Is(a.err, client.ErrUnknownPartition) && a.dt == "hot":
	default:
		if rw.err == nil {
			rw.err = fmt.Errorf("append %d to dt=%s: %w", a.id, a.dt, a.err)
		}
	}
}

func (rw *raceWriter) ackedRows(dt string) int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.acked[dt]
}

func (rw *raceWriter) failure() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.err
}

// finish stops the writer and waits for every outcome.
func (rw *raceWriter) finish(t *testing.T) {
	t.Helper()
	close(rw.stop)
	select {
	case <-rw.done:
	case <-time.After(2 * raceWait):
		t.Fatal("the racing writer did not finish: an append or its future hangs")
	}
}

// raceReader follows every bucket of dt=hot and dt=cold with its own
// table handle, as another process would.
type raceReader struct {
	tbl  *client.Table
	sc   *client.LogScanner
	seen map[string]map[int64]int // reads by partition name and id
	// unknown counts the Polls that failed with ErrUnknownPartition.
	unknown int
}

func newRaceReader(t *testing.T, ctx context.Context, tbl *client.Table) *raceReader {
	t.Helper()
	sc, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	r := &raceReader{tbl: tbl, sc: sc, seen: map[string]map[int64]int{}}
	for _, dt := range []string{"hot", "cold"} {
		for b := range tbl.Buckets() {
			if err := sc.SubscribePartition(ctx, dt, b, client.Earliest()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// poll reads once; any error but ErrUnknownPartition fails the test.
func (r *raceReader) poll(t *testing.T, ctx context.Context) {
	t.Helper()
	recs, err := r.sc.Poll(ctx)
	switch {
	case errors.Is(err, client.ErrUnknownPartition):
		t.Logf("reader: %v", err)
		r.unknown++
	case err != nil:
		t.Fatalf("reader: %v", err)
	}
	for _, rec := range recs {
		v := record.NewRowView(r.tbl.Schema(), rec.Row)
		if rec.Partition != "dt="+v.String(0) {
			t.Fatalf("reader: row %d of dt=%s read from %s", v.Int64(1), v.String(0), rec.Partition)
		}
		if r.seen[rec.Partition] == nil {
			r.seen[rec.Partition] = map[int64]int{}
		}
		r.seen[rec.Partition][v.Int64(1)]++
	}
}

// TestWriteRacingPartitionDrop: a writer appends without pause (acks=all)
// to dt=hot and dt=cold of a table that creates partitions on write while
// dt=hot is dropped. Every append to dt=hot is acknowledged or fails with
// ErrUnknownPartition, none hangs, and every one to dt=cold is
// acknowledged; the writer's later rows make dt=hot again, with a new id,
// and it holds exactly the rows acknowledged from its first on, once each
// (rows of the failed batches are in no partition). A reader following
// both gets ErrUnknownPartition for dt=hot, goes on reading dt=cold to
// the last acknowledged row, and subscribing dt=hot again reads the new
// partition.
func TestWriteRacingPartitionDrop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := StartCluster(t, 3, ClusterOptions{})
	ctx := t.Context()
	cl := c.Client(ctx)
	const db, name = "race", "events"
	tbl := createPartitioned(t, ctx, cl, client.TableSpec{Database: db, Name: name, Schema: partLogSchema,
		PartitionKeys: []string{"dt"}, Buckets: 2, Replication: 3})

	rw := startRaceWriter(t, tbl)
	defer func() {
		select {
		case <-rw.stop:
		default:
			close(rw.stop)
			<-rw.done
		}
	}()
	waitFor(t, 30*time.Second, "the writer to make dt=hot and dt=cold", func() bool {
		return rw.ackedRows("hot") > 0 && rw.ackedRows("cold") > 0
	})
	readerTbl, err := cl.Table(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	reader := newRaceReader(t, ctx, readerTbl)
	before, err := partitionsByName(ctx, cl, db, name)
	if err != nil {
		t.Fatal(err)
	}
	old := before["dt=hot"]
	waitFor(t, 30*time.Second, "300 rows of dt=hot acknowledged", func() bool {
		reader.poll(t, ctx)
		return rw.ackedRows("hot") >= 300
	})
	if err := rw.failure(); err != nil {
		t.Fatal(err)
	}

	ackedAtDrop := rw.ackedRows("hot")
	if err := cl.Admin().DropPartition(ctx, db, name, "dt=hot"); err != nil {
		t.Fatal(err)
	}
	t.Logf("dropped dt=hot (id %d) with %d rows acknowledged", old.ID, ackedAtDrop)
	var recreated client.PartitionInfo
	waitFor(t, 30*time.Second, "the writer to make dt=hot again, and 300 more rows of it acknowledged", func() bool {
		reader.poll(t, ctx)
		if rw.failure() != nil {
			return true
		}
		parts, err := partitionsByName(ctx, cl, db, name)
		if err != nil {
			return false
		}
		if p, ok := parts["dt=hot"]; ok && p.ID != old.ID && recreated.ID == 0 {
			recreated, ackedAtDrop = p, rw.ackedRows("hot")
		}
		return recreated.ID != 0 && rw.ackedRows("hot") >= ackedAtDrop+300
	})
	rw.finish(t)
	if err := rw.failure(); err != nil {
		t.Fatal(err)
	}
	if recreated.ID <= old.ID || recreated.Origin != "on-write" {
		t.Fatalf("dt=hot made again as %+v; the dropped one had id %d", recreated, old.ID)
	}
	waitFor(t, 30*time.Second, "the dropped dt=hot's folders deleted", func() bool { return len(replicaDirs(t, c, old.ID)) == 0 })

	// The new dt=hot holds the acknowledged rows from its first on: the
	// writer sent every row after some id there, and every row before to
	// the dropped partition.
	newHot := readPartitions(t, ctx, tbl, []string{"dt=hot"})
	outcome := map[int64]error{}
	var failed int
	for _, a := range rw.appends {
		if a.dt == "hot" {
			outcome[a.id] = a.err
			if a.err != nil {
				failed++
			}
		}
	}
	first := int64(-1)
	inNew := map[int64]bool{}
	for _, r := range newHot {
		if inNew[r.id] {
			t.Fatalf("row %d read twice from the new dt=hot", r.id)
		}
		inNew[r.id] = true
		if first < 0 || r.id < first {
			first = r.id
		}
	}
	for _, a := range rw.appends {
		switch {
		case a.dt != "hot" || a.id < first:
		case a.err != nil:
			t.Fatalf("row %d of dt=hot, after the new partition's first row %d, failed: %v", a.id, first, a.err)
		case !inNew[a.id]:
			t.Fatalf("row %d of dt=hot, acknowledged after the new partition's first row %d, is not in it", a.id, first)
		}
	}
	for id := range inNew {
		if err, ok := outcome[id]; !ok || err != nil {
			t.Fatalf("row %d read from the new dt=hot, its append failed: %v", id, err)
		}
	}
	t.Logf("dt=hot: %d appends failed with ErrUnknownPartition; the new partition (id %d) holds rows from %d on, %d rows",
		failed, recreated.ID, first, len(newHot))

	// The reader: ErrUnknownPartition for the dropped dt=hot, then every
	// acknowledged row of dt=cold once.
	var coldAcked []int64
	for _, a := range rw.appends {
		if a.dt == "cold" {
			coldAcked = append(coldAcked, a.id)
		}
	}
	waitFor(t, 30*time.Second, "the reader to read every acknowledged row of dt=cold", func() bool {
		reader.poll(t, ctx)
		return len(reader.seen["dt=cold"]) >= len(coldAcked)
	})
	for _, id := range coldAcked {
		if n := reader.seen["dt=cold"][id]; n != 1 {
			t.Fatalf("reader: acknowledged row %d of dt=cold read %d times", id, n)
		}
	}
	if reader.unknown == 0 {
		t.Fatal("the reader of the dropped dt=hot got no ErrUnknownPartition")
	}
	readFailed := 0
	for id := range reader.seen["dt=hot"] {
		if id >= first {
			t.Fatalf("reader: row %d of the new dt=hot read by the subscription of the dropped one", id)
		}
		if outcome[id] != nil {
			readFailed++
		}
	}
	t.Logf("reader: %d rows of the dropped dt=hot read, %d of them of appends that failed with ErrUnknownPartition",
		len(reader.seen["dt=hot"]), readFailed)
	for b := range tbl.Buckets() {
		if pos, ok := reader.sc.PartitionPosition("dt=hot", b); ok {
			t.Fatalf("reader: the dropped dt=hot bucket %d still subscribed, at %d", b, pos)
		}
	}
	// Subscribing dt=hot again reads the new partition.
	for b := range tbl.Buckets() {
		if err := reader.sc.SubscribePartition(ctx, "dt=hot", b, client.Earliest()); err != nil {
			t.Fatalf("subscribing the new dt=hot: %v", err)
		}
	}
	delete(reader.seen, "dt=hot")
	waitFor(t, 30*time.Second, "the reader to read the new dt=hot", func() bool {
		reader.poll(t, ctx)
		return len(reader.seen["dt=hot"]) >= len(inNew)
	})
	for id := range inNew {
		if n := reader.seen["dt=hot"][id]; n != 1 {
			t.Fatalf("reader: row %d of the new dt=hot read %d times", id, n)
		}
	}
}
