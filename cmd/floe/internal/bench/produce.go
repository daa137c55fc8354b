package bench

import (
	"context"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

// benchPipelineDepth bounds the appended, unacknowledged records bench e2e
// tracks.
const benchPipelineDepth = 8192

// pipelineDepth bounds the appended, unacknowledged records one --batching
// goroutine tracks: twice what the writer's buffer holds, so the writer's
// own bound (client.DefaultMaxBufferedBytes) is what holds a fast appender
// back, as it would a service's, and not this bookkeeping. A fixed 8,192
// records (8 MiB of 1 KiB rows) capped a writer over many buckets at 32
// batches in flight however many buckets it had.
func pipelineDepth(recordBytes int) int {
	return min(max(2*client.DefaultMaxBufferedBytes/max(recordBytes, 1), benchPipelineDepth), 1<<20)
}

// ProduceMode is how bench produce's callers append.
type ProduceMode struct {
	// Batch is the records each caller appends before waiting for their
	// acks (1: one at a time).
	Batch int
	// Batching: append without waiting; latency is Append to ack per
	// record (Batch is ignored).
	Batching bool
	// SharedWriter: the callers share one writer, which batches their
	// records and sends a bucket's batch when it fills or after its
	// linger.
	SharedWriter bool
}

// Produce runs the writers (or the callers of one shared writer) on tbl, a
// table of LogSchema, for f.Duration and waits for their acks.
func Produce(ctx context.Context, tbl *client.Table, f *Options, m ProduceMode) (Result, error) {
	batch, batching := m.Batch, m.Batching
	var shared *client.AppendWriter
	if m.SharedWriter {
		var err error
		if shared, err = tbl.NewAppendWriter(f.appendOptions()); err != nil {
			return Result{}, err
		}
		drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.Duration+benchDrainTimeout)
		defer cancel()
		defer shared.Close(drainCtx)
	}
	r, err := runCallers(ctx, f, func(runCtx context.Context, c *benchCaller, i int) error {
		return produceRows(ctx, runCtx, c, tbl, f, int64(i)<<40, batch, batching, shared)
	})
	if err != nil {
		return Result{}, err
	}
	if shared != nil { // its callers waited for every ack
		st := shared.Stats()
		r.batches, r.batchRows = st.Batches, st.Acknowledged
	}
	res := newBenchResult("produce", f, r.done, r.errors, r.elapsed, r.lat, r.cpu)
	if r.batches > 0 {
		res.RowsPerBatch = float64(r.batchRows) / float64(r.batches)
	}
	return res, nil
}

// produceRows appends until runCtx ends, then waits for the acks (bounded
// by benchDrainTimeout). Errors of single records are counted, not
// returned. With a shared writer it leaves sending to the writer's linger;
// with its own, it flushes each group.
func produceRows(ctx, runCtx context.Context, c *benchCaller, tbl *client.Table, f *Options, firstID int64, batch int,
	batching bool, shared *client.AppendWriter) error {
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.Duration+benchDrainTimeout)
	defer cancel()
	w, flush := shared, func(context.Context) error { return nil }
	if w == nil {
		var err error
		if w, err = tbl.NewAppendWriter(f.appendOptions()); err != nil {
			return err
		}
		defer func() {
			_ = w.Close(drainCtx)
			st := w.Stats()
			c.batches, c.batchRows = st.Batches, st.Acknowledged
		}()
		flush = w.Flush
	}
	rows := newBenchRows(tbl, f.RecordBytes, f.Partitions)
	id := firstID
	appendOne := func() (*client.AppendFuture, time.Time, bool) {
		row, err := rows.next(id)
		if err != nil {
			c.errors++
			return nil, time.Time{}, false
		}
		id++
		t0 := time.Now()
		fut, err := w.Append(runCtx, row)
		if err != nil {
			c.countError(runCtx)
			return nil, t0, false
		}
		return fut, t0, true
	}
	if batching {
		return c.pipelined(runCtx, drainCtx, w, pipelineDepth(f.RecordBytes), appendOne)
	}
	c.sendGroups(runCtx, drainCtx, batch, func() (sentRow, bool) {
		fut, t0, ok := appendOne()
		if !ok {
			return sentRow{}, false
		}
		return sentRow{func(ctx context.Context) error { _, err := fut.Wait(ctx); return err }, t0}, true
	}, flush)
	return nil
}

// pipelined appends without waiting; a second goroutine times each record
// from Append to its ack.
func (c *benchCaller) pipelined(runCtx, drainCtx context.Context, w *client.AppendWriter, depth int,
	appendOne func() (*client.AppendFuture, time.Time, bool)) error {
	type sent struct {
		fut *client.AppendFuture
		t0  time.Time
	}
	pending := make(chan sent, depth)
	var wg sync.WaitGroup
	var acked, failed int64
	wg.Go(func() {
		for s := range pending {
			if _, err := s.fut.Wait(drainCtx); err != nil {
				failed++
				continue
			}
			acked++
			c.lat.add(time.Since(s.t0))
		}
	})
	for runCtx.Err() == nil {
		if fut, t0, ok := appendOne(); ok {
			pending <- sent{fut, t0}
		}
	}
	close(pending)
	_ = w.Flush(drainCtx)
	wg.Wait()
	c.done += acked
	c.errors += failed
	return nil
}
