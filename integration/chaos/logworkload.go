package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// LogWorkload appends unique records (writer, sequence) with acks=all
// through idempotent writers, one at a time per writer, and remembers
// which were acknowledged where.
type LogWorkload struct {
	Database, Table string
	// Buckets are the table's, or with Partitioned each partition's.
	Buckets int32
	Writers int
	// Pad is the size of each record's padding, so segments fill.
	Pad int
	// Partitioned partitions the table by a day column, dt, whose
	// partitions are created and dropped while Run runs (partlog.go).
	Partitioned bool
	// Seed draws the partitions' churn (Partitioned only).
	Seed uint64

	cl        *client.Client
	tbl       *client.Table
	days      *dayPlan // Partitioned only
	attempted atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	acked     map[recordID]logAck
}

type recordID struct{ writer, seq int64 }

// logAck is where an acknowledgement put a record: its partition's name
// ("" in a table not partitioned), bucket and offset. The partition's id
// is not in the answer; a name that is never dropped has one id.
type logAck struct {
	partition string
	bucket    int32
	offset    int64
}

// The log table's columns; a partitioned table has dt last, so the
// others keep their indexes.
const (
	logSchema            = "writer BIGINT NOT NULL, seq BIGINT NOT NULL, pad STRING"
	partitionedLogSchema = logSchema + ", dt STRING NOT NULL"
)

// Setup creates the table (replication 3), and with Partitioned its first
// partitions.
func (w *LogWorkload) Setup(ctx context.Context, cl *client.Client, props map[string]string) error {
	w.cl = cl
	w.acked = map[recordID]logAck{}
	if err := cl.Admin().CreateDatabase(ctx, w.Database, client.IfNotExists()); err != nil {
		return err
	}
	spec := client.TableSpec{Database: w.Database, Name: w.Table, Schema: logSchema,
		Buckets: w.Buckets, Replication: 3, Properties: props}
	if w.Partitioned {
		spec.Schema, spec.PartitionKeys = partitionedLogSchema, []string{"dt"}
	}
	if _, err := cl.Admin().CreateTable(ctx, spec); err != nil {
		return err
	}
	var err error
	if w.tbl, err = cl.Table(ctx, w.Database, w.Table); err != nil {
		return err
	}
	if w.Partitioned {
		return w.setUpDays(ctx)
	}
	return nil
}

// Run appends until ctx ends (and with Partitioned opens and drops
// partitions meanwhile).
func (w *LogWorkload) Run(ctx context.Context, h *History) error {
	var wg sync.WaitGroup
	if w.Partitioned {
		wg.Go(func() { w.churn(ctx, h) })
	}
	errs := make(chan error, w.Writers)
	for i := range w.Writers {
		wg.Go(func() {
			if err := w.writer(ctx, h, int64(i+1)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (w *LogWorkload) writer(ctx context.Context, h *History, id int64) error {
	aw, err := w.tbl.NewAppendWriter(client.AppendWriterOptions{DeliveryTimeout: 20 * time.Second, RequestTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer aw.Close(context.Background())
	pad := strings.Repeat("p", w.Pad)
	rng := rand.New(rand.NewPCG(w.Seed, uint64(id))) // picks the partitions
	for seq := int64(0); ctx.Err() == nil; seq++ {
		enc := w.tbl.NewRowEncoder()
		enc.SetInt64(0, id)
		enc.SetInt64(1, seq)
		enc.SetString(2, pad)
		what, partition := fmt.Sprintf("append %d/%d", id, seq), ""
		if w.Partitioned {
			day := w.days.pick(rng)
			enc.SetString(3, day)
			partition = dayPartition(day)
			what += " to " + partition
		}
		row, err := enc.Finish(nil)
		if err != nil {
			return err
		}
		start := h.Since()
		w.attempted.Add(1)
		fut, err := aw.Append(ctx, row)
		refused := err != nil
		var res client.AppendResult
		if err == nil {
			// The wait outlives the run's end: an append in flight when
			// the run stops still gets its outcome.
			wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err = fut.Wait(wctx)
			cancel()
		}
		h.Op(int(id), what, start, err)
		if err != nil {
			w.failed.Add(1)
			if errors.Is(err, client.ErrWriterClosed) {
				return nil
			}
			if refused {
				// Refused before it was buffered (a partition that cannot
				// be created now: no metadata leader, a node down): the
				// next row waits a little rather than spinning.
				pause(ctx, refusedAppendPause)
			}
			continue // outcome unknown (unless refused): the record may or may not be there
		}
		w.mu.Lock()
		w.acked[recordID{id, seq}] = logAck{partition: partition, bucket: res.Bucket, offset: res.Offset}
		w.mu.Unlock()
	}
	return nil
}

// refusedAppendPause is how long a writer waits after an append refused
// before it was buffered.
const refusedAppendPause = 50 * time.Millisecond

// LogResult is what the log checker found.
type LogResult struct {
	Attempted    int64 `json:"attempted"`
	Acknowledged int64 `json:"acknowledged"`
	Failed       int64 `json:"failed"`
	Read         int   `json:"read"`
	Lost         int   `json:"lost"`
	Duplicated   int   `json:"duplicated"`
	Reordered    int   `json:"reordered"`
	// WrongOffset counts acknowledged records read at another offset than
	// the acknowledgement said.
	WrongOffset int `json:"wrong_offset"`
	// Excluded counts acknowledged records of partitions the workload
	// dropped (Partitioned): their data is gone by design, so they are
	// not looked for.
	Excluded int      `json:"excluded"`
	Examples []string `json:"examples,omitempty"`
}

// Check reads every bucket (of every partition) from its earliest offset
// to its high watermark and compares with what was acknowledged.
func (w *LogWorkload) Check(ctx context.Context) (LogResult, error) {
	res := LogResult{Attempted: w.attempted.Load(), Failed: w.failed.Load()}
	w.mu.Lock()
	acks := maps.Clone(w.acked)
	w.mu.Unlock()
	res.Acknowledged = int64(len(acks))
	var r *logReader
	var err error
	if w.Partitioned {
		r, err = w.partitionsReader(ctx)
	} else {
		r, err = w.tableReader(ctx)
	}
	if r != nil {
		defer r.sc.Close()
	}
	if err != nil {
		return res, err
	}
	reads, err := r.readAll(ctx)
	if err != nil {
		return res, err
	}
	acked := make(map[recordID]logPos, len(acks))
	for id, a := range acks {
		if a.partition != "" && w.days.isRetired(a.partition) {
			res.Excluded++
			continue
		}
		// A partition that is gone though never dropped has no id: its
		// records are lost.
		acked[id] = logPos{part: r.ids[a.partition], partition: a.partition, bucket: a.bucket, offset: a.offset}
	}
	compareLog(&res, acked, reads)
	return res, nil
}

// setBucket is a bucket of a table or of a partition, by the id its
// buckets are keyed by (the table's or the partition's).
type setBucket struct {
	id     uint64
	bucket int32
}

// logReader reads subscribed buckets up to the high watermarks they had
// when subscribed.
type logReader struct {
	sc     *client.LogScanner
	schema record.Schema
	ends   map[setBucket]int64
	// ids are the bucket sets' ids by partition name ("": the table).
	ids map[string]uint64
}

// tableReader subscribes every bucket of a table that is not partitioned.
func (w *LogWorkload) tableReader(ctx context.Context) (*logReader, error) {
	sc, err := w.tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	r := &logReader{sc: sc, schema: w.tbl.Schema(), ends: map[setBucket]int64{}, ids: map[string]uint64{"": w.tbl.ID()}}
	for b := range w.Buckets {
		if r.ends[setBucket{w.tbl.ID(), b}], err = w.tbl.ListOffset(ctx, b, client.Latest()); err != nil {
			return r, err
		}
		if err := sc.Subscribe(b, client.Earliest()); err != nil {
			return r, err
		}
	}
	return r, nil
}

// readAll polls until every subscribed bucket reached its end, and
// returns the records below the ends in offset order per bucket.
func (r *logReader) readAll(ctx context.Context) ([]readRecord, error) {
	var reads []readRecord
	pos := map[setBucket]int64{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done := true
		for k, end := range r.ends {
			if pos[k] < end {
				done = false
			}
		}
		if done {
			return reads, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("chaos: reading back did not reach the high watermarks %v (at %v)", r.ends, pos)
		}
		recs, err := r.sc.Poll(ctx)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			k := setBucket{r.ids[rec.Partition], rec.Bucket}
			pos[k] = rec.Offset + 1
			if rec.Offset >= r.ends[k] {
				continue
			}
			v := record.NewRowView(r.schema, rec.Row)
			reads = append(reads, readRecord{id: recordID{v.Int64(0), v.Int64(1)},
				at: logPos{part: k.id, partition: rec.Partition, bucket: rec.Bucket, offset: rec.Offset}})
		}
	}
}

// logPos is where a record is: the id of its bucket set (the table's or
// its partition's, with the partition's name for messages), its bucket
// and offset.
type logPos struct {
	part      uint64
	partition string // "" in a table not partitioned
	bucket    int32
	offset    int64
}

// same says whether two positions are the same place.
func (p logPos) same(q logPos) bool {
	return p.part == q.part && p.bucket == q.bucket && p.offset == q.offset
}

func (p logPos) String() string {
	if p.partition == "" {
		return fmt.Sprintf("bucket %d offset %d", p.bucket, p.offset)
	}
	return fmt.Sprintf("%s (id %d) bucket %d offset %d", p.partition, p.part, p.bucket, p.offset)
}

// readRecord is a record read back: its id and where it was.
type readRecord struct {
	id recordID
	at logPos
}

// compareLog checks the records read back (in offset order per bucket)
// against the acknowledged ones: every acknowledged record read once, at
// the place acknowledged; no record twice; each writer's records in
// sequence order within a bucket (of a partition).
func compareLog(res *LogResult, acked map[recordID]logPos, reads []readRecord) {
	note := func(format string, args ...any) {
		if len(res.Examples) < 10 {
			res.Examples = append(res.Examples, fmt.Sprintf(format, args...))
		}
	}
	type writerIn struct {
		setBucket
		writer int64
	}
	seen := map[recordID]int{}
	last := map[writerIn]int64{} // last seq read
	for _, r := range reads {
		id := r.id
		seen[id]++
		res.Read++
		if seen[id] == 2 {
			res.Duplicated++
			note("record %d/%d read twice (again at %s)", id.writer, id.seq, r.at)
		}
		key := writerIn{setBucket{r.at.part, r.at.bucket}, id.writer}
		if prev, ok := last[key]; ok && id.seq <= prev {
			res.Reordered++
			note("writer %d: seq %d after %d at %s", id.writer, id.seq, prev, r.at)
		}
		last[key] = id.seq
		if a, ok := acked[id]; ok && !a.same(r.at) {
			res.WrongOffset++
			note("record %d/%d acknowledged at %s, read at %s", id.writer, id.seq, a, r.at)
		}
	}
	for id, a := range acked {
		if seen[id] == 0 {
			res.Lost++
			note("acknowledged record %d/%d (%s) not read", id.writer, id.seq, a)
		}
	}
}
