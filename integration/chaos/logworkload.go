package chaos

import (
	"context"
	"errors"
	"fmt"
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
	Buckets         int32
	Writers         int
	// Pad is the size of each record's padding, so segments fill.
	Pad int

	tbl       *client.Table
	attempted atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	acked     map[recordID]client.AppendResult
}

type recordID struct{ writer, seq int64 }

const logSchema = "writer BIGINT NOT NULL, seq BIGINT NOT NULL, pad STRING"

// Setup creates the table (replication 3).
func (w *LogWorkload) Setup(ctx context.Context, cl *client.Client, props map[string]string) error {
	w.acked = map[recordID]client.AppendResult{}
	if err := cl.Admin().CreateDatabase(ctx, w.Database, client.IfNotExists()); err != nil {
		return err
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: w.Database, Name: w.Table, Schema: logSchema,
		Buckets: w.Buckets, Replication: 3, Properties: props}); err != nil {
		return err
	}
	var err error
	w.tbl, err = cl.Table(ctx, w.Database, w.Table)
	return err
}

// Run appends until ctx ends.
func (w *LogWorkload) Run(ctx context.Context, h *History) error {
	var wg sync.WaitGroup
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
	for seq := int64(0); ctx.Err() == nil; seq++ {
		enc := w.tbl.NewRowEncoder()
		enc.SetInt64(0, id)
		enc.SetInt64(1, seq)
		enc.SetString(2, pad)
		row, err := enc.Finish(nil)
		if err != nil {
			return err
		}
		start := h.Since()
		w.attempted.Add(1)
		fut, err := aw.Append(ctx, row)
		var res client.AppendResult
		if err == nil {
			// The wait outlives the run's end: an append in flight when
			// the run stops still gets its outcome.
			wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			res, err = fut.Wait(wctx)
			cancel()
		}
		h.Op(int(id), fmt.Sprintf("append %d/%d", id, seq), start, err)
		if err != nil {
			w.failed.Add(1)
			if errors.Is(err, client.ErrWriterClosed) {
				return nil
			}
			continue // outcome unknown: the record may or may not be there
		}
		w.mu.Lock()
		w.acked[recordID{id, seq}] = res
		w.mu.Unlock()
	}
	return nil
}

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
	WrongOffset int      `json:"wrong_offset"`
	Examples    []string `json:"examples,omitempty"`
}

// Check reads every bucket from its earliest offset to its high watermark
// and compares with what was acknowledged.
func (w *LogWorkload) Check(ctx context.Context) (LogResult, error) {
	res := LogResult{Attempted: w.attempted.Load(), Failed: w.failed.Load()}
	w.mu.Lock()
	acked := make(map[recordID]client.AppendResult, len(w.acked))
	for k, v := range w.acked {
		acked[k] = v
	}
	w.mu.Unlock()
	res.Acknowledged = int64(len(acked))
	sc, err := w.tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 200 * time.Millisecond})
	if err != nil {
		return res, err
	}
	defer sc.Close()
	ends := make([]int64, w.Buckets)
	for b := range w.Buckets {
		if ends[b], err = w.tbl.ListOffset(ctx, b, client.Latest()); err != nil {
			return res, err
		}
		if err := sc.Subscribe(b, client.Earliest()); err != nil {
			return res, err
		}
	}
	var reads []readRecord
	pos := make([]int64, w.Buckets)
	schema := w.tbl.Schema()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		done := true
		for b := range w.Buckets {
			if pos[b] < ends[b] {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("chaos: reading back did not reach the high watermarks %v (at %v)", ends, pos)
		}
		recs, err := sc.Poll(ctx)
		if err != nil {
			return res, err
		}
		for _, r := range recs {
			pos[r.Bucket] = r.Offset + 1
			if r.Offset >= ends[r.Bucket] {
				continue
			}
			v := record.NewRowView(schema, r.Row)
			reads = append(reads, readRecord{id: recordID{v.Int64(0), v.Int64(1)}, bucket: r.Bucket, offset: r.Offset})
		}
	}
	compareLog(&res, acked, reads)
	return res, nil
}

// readRecord is a record read back: its id and where it was.
type readRecord struct {
	id     recordID
	bucket int32
	offset int64
}

// compareLog checks the records read back (in offset order per bucket)
// against the acknowledged ones: every acknowledged record read once, at
// the offset acknowledged; no record twice; each writer's records in
// sequence order within a bucket.
func compareLog(res *LogResult, acked map[recordID]client.AppendResult, reads []readRecord) {
	note := func(format string, args ...any) {
		if len(res.Examples) < 10 {
			res.Examples = append(res.Examples, fmt.Sprintf(format, args...))
		}
	}
	seen := map[recordID]int{}
	last := map[[2]int64]int64{} // (bucket, writer) → last seq read
	for _, r := range reads {
		id := r.id
		seen[id]++
		res.Read++
		if seen[id] == 2 {
			res.Duplicated++
			note("record %d/%d read twice (again at bucket %d offset %d)", id.writer, id.seq, r.bucket, r.offset)
		}
		key := [2]int64{int64(r.bucket), id.writer}
		if prev, ok := last[key]; ok && id.seq <= prev {
			res.Reordered++
			note("writer %d: seq %d after %d in bucket %d (offset %d)", id.writer, id.seq, prev, r.bucket, r.offset)
		}
		last[key] = id.seq
		if a, ok := acked[id]; ok && (a.Bucket != r.bucket || a.Offset != r.offset) {
			res.WrongOffset++
			note("record %d/%d acknowledged at %d/%d, read at %d/%d", id.writer, id.seq, a.Bucket, a.Offset, r.bucket, r.offset)
		}
	}
	for id, a := range acked {
		if seen[id] == 0 {
			res.Lost++
			note("acknowledged record %d/%d (bucket %d offset %d) not read", id.writer, id.seq, a.Bucket, a.Offset)
		}
	}
}
