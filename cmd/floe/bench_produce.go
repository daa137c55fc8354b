package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

// benchPipelineDepth bounds the appended, unacknowledged records one
// --batching goroutine tracks (the writer's buffer bounds them too).
const benchPipelineDepth = 8192

func benchProduceCmd(env *cliEnv) clientCmd {
	var f benchFlags
	var batch int
	var batching bool
	return clientCmd{name: "bench produce", streaming: true,
		usage: "bench produce [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--record-bytes 1024] [--acks all] [--batch 1] [--batching]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.IntVar(&batch, "batch", 1, "records each goroutine appends before waiting for their acks (1: one record at a time)")
			fs.BoolVar(&batching, "batching", false, "append without waiting; latency is Append to ack per record (--batch is ignored)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			if batch <= 0 {
				return fmt.Errorf("%w: --batch must be positive", errUsage)
			}
			tbl, err := openBenchTable(ctx, c, cf, &f)
			if err != nil {
				return err
			}
			res, err := benchProduce(ctx, tbl, &f, batch, batching)
			if err != nil {
				return err
			}
			mode := fmt.Sprintf("batch %d", batch)
			if batching {
				mode = "batching"
			}
			title := fmt.Sprintf("floe bench produce: %s, %d writers, %d-byte records, acks=%s, %s",
				f.table, f.concurrency, f.recordBytes, f.ackMode, mode)
			return printBenchResult(env, title, res)
		}}
}

// produceWorker is one writer goroutine's state and counts.
type produceWorker struct {
	acked, errors int64
	lat           *reservoir
}

// benchProduce runs the writers for --duration and waits for their acks.
func benchProduce(ctx context.Context, tbl *client.Table, f *benchFlags, batch int, batching bool) (benchResult, error) {
	runCtx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	workers := make([]*produceWorker, f.concurrency)
	errs := make([]error, f.concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		pw := &produceWorker{lat: newReservoir(maxLatencySamples / f.concurrency)}
		workers[i] = pw
		wg.Go(func() {
			errs[i] = pw.run(ctx, runCtx, tbl, f, int64(i)<<40, batch, batching)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return benchResult{}, err
	}
	var acked, failed int64
	var rs []*reservoir
	for _, pw := range workers {
		acked += pw.acked
		failed += pw.errors
		rs = append(rs, pw.lat)
	}
	return newBenchResult("produce", f, acked, failed, elapsed, mergeLatencies(rs)), nil
}

// run appends until runCtx ends, then waits for the acks (bounded by
// benchDrainTimeout). Errors of single records are counted, not returned.
func (pw *produceWorker) run(ctx, runCtx context.Context, tbl *client.Table, f *benchFlags, firstID int64, batch int, batching bool) error {
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: f.ackMode, Linger: f.linger})
	if err != nil {
		return err
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.duration+benchDrainTimeout)
	defer cancel()
	defer w.Close(drainCtx)
	rows := newBenchRows(tbl, f.recordBytes)
	id := firstID
	appendOne := func() (*client.AppendFuture, time.Time, bool) {
		row, err := rows.next(id)
		if err != nil {
			pw.errors++
			return nil, time.Time{}, false
		}
		id++
		t0 := time.Now()
		fut, err := w.Append(runCtx, row)
		if err != nil {
			if runCtx.Err() == nil {
				pw.errors++
			}
			return nil, t0, false
		}
		return fut, t0, true
	}
	if batching {
		return pw.pipelined(runCtx, drainCtx, w, appendOne)
	}
	type sent struct {
		fut *client.AppendFuture
		t0  time.Time
	}
	group := make([]sent, 0, batch)
	for runCtx.Err() == nil {
		group = group[:0]
		for range batch {
			fut, t0, ok := appendOne()
			if ok {
				group = append(group, sent{fut, t0})
			}
		}
		_ = w.Flush(drainCtx) // sends at once; errors are counted per record below
		for _, s := range group {
			if _, err := s.fut.Wait(drainCtx); err != nil {
				pw.errors++
				continue
			}
			pw.acked++
			pw.lat.add(time.Since(s.t0))
		}
	}
	return nil
}

// pipelined appends without waiting; a second goroutine times each record
// from Append to its ack.
func (pw *produceWorker) pipelined(runCtx, drainCtx context.Context, w *client.AppendWriter,
	appendOne func() (*client.AppendFuture, time.Time, bool)) error {
	type sent struct {
		fut *client.AppendFuture
		t0  time.Time
	}
	pending := make(chan sent, benchPipelineDepth)
	var wg sync.WaitGroup
	var acked, failed int64
	wg.Go(func() {
		for s := range pending {
			if _, err := s.fut.Wait(drainCtx); err != nil {
				failed++
				continue
			}
			acked++
			pw.lat.add(time.Since(s.t0))
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
	pw.acked += acked
	pw.errors += failed
	return nil
}
