package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// e2ePaceInterval is how often an e2e writer appends what its rate makes
// due.
const e2ePaceInterval = time.Millisecond

func benchE2ECmd(env *cliEnv) clientCmd {
	var f benchFlags
	var rate float64
	return clientCmd{summary: "latency from produce to consume", streaming: true,
		usage: "bench e2e [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--record-bytes 1024] [--acks all] [--rate 10000]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.Float64Var(&rate, "rate", 10000, "records per second to write, over all writer goroutines")
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
			if f.recordBytes < 8 {
				return fmt.Errorf("%w: --record-bytes must be at least 8 (the send time)", errUsage)
			}
			if rate <= 0 || rate > 1e8 {
				return fmt.Errorf("%w: --rate must be in (0, 1e8]", errUsage)
			}
			tbl, err := openBenchTable(ctx, c, cf, &f)
			if err != nil {
				return err
			}
			res, err := benchE2E(ctx, cf, tbl, &f, rate)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench e2e: %s, %d writers at %.0f records/s, %d-byte records, acks=%s (latency: Append to seen by a scanner)",
				f.table, f.concurrency, rate, f.recordBytes, f.ackMode)
			return printBenchResult(env, cf, title, res)
		}}
}

// e2eWriters is the writing side of the e2e benchmark.
type e2eWriters struct {
	acked, failed atomic.Int64
	done          chan struct{} // closed when every record is acknowledged or failed
}

// benchE2E writes at rate for --duration, with the send time in each
// payload's first 8 bytes, while a scanner following every bucket from the
// latest offset times each record from Append to Poll.
func benchE2E(ctx context.Context, cf *clientFlags, tbl *client.Table, f *benchFlags, rate float64) (benchResult, error) {
	s, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 100 * time.Millisecond})
	if err != nil {
		return benchResult{}, err
	}
	defer s.Close()
	for b := range tbl.Buckets() {
		tctx, cancel := context.WithTimeout(ctx, cf.timeout)
		off, err := tbl.ListOffset(tctx, b, client.Latest())
		cancel()
		if err != nil {
			return benchResult{}, err
		}
		if err := s.Subscribe(b, client.AtOffset(off)); err != nil {
			return benchResult{}, err
		}
	}
	w, err := tbl.NewAppendWriter(f.appendOptions())
	if err != nil {
		return benchResult{}, err
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.duration+benchDrainTimeout)
	defer cancel()
	defer w.Close(drainCtx)

	start, cpu := time.Now(), markCPU(f.pids)
	writers := &e2eWriters{done: make(chan struct{})}
	var wg sync.WaitGroup
	runCtx, stop := context.WithTimeout(ctx, f.duration)
	defer stop()
	for i := range f.concurrency {
		wg.Go(func() { writers.run(runCtx, drainCtx, w, tbl, f, rate/float64(f.concurrency), int64(i)<<40) })
	}
	go func() {
		wg.Wait()
		close(writers.done)
	}()

	lat := newReservoir(maxLatencySamples)
	startNs := start.UnixNano()
	schema := tbl.Schema()
	var seen int64
	var drainBy time.Time
	for {
		select {
		case <-writers.done:
			if drainBy.IsZero() {
				drainBy = time.Now().Add(benchDrainTimeout)
			}
		default:
		}
		if !drainBy.IsZero() && (seen >= writers.acked.Load() || time.Now().After(drainBy)) {
			break
		}
		recs, err := s.Poll(drainCtx)
		if err != nil {
			if drainCtx.Err() != nil {
				break
			}
			return benchResult{}, err
		}
		now := time.Now().UnixNano()
		for _, r := range recs {
			p := record.NewRowView(schema, r.Row).Bytes(1)
			if len(p) < 8 {
				continue
			}
			sentNs := int64(binary.BigEndian.Uint64(p))
			if sentNs < startNs || sentNs > now {
				continue // another writer's row
			}
			lat.add(time.Duration(now - sentNs))
			seen++
		}
	}
	<-writers.done
	elapsed := time.Since(start)
	res := newBenchResult("e2e", f, seen, writers.failed.Load(), elapsed, mergeLatencies([]*reservoir{lat}), cpu.since())
	res.Missing = max(writers.acked.Load()-seen, 0)
	res.TargetRate = rate
	return res, nil
}

// run appends at rate until runCtx ends, then waits for the acks.
func (e *e2eWriters) run(runCtx, drainCtx context.Context, w *client.AppendWriter, tbl *client.Table, f *benchFlags, rate float64, firstID int64) {
	rows := newBenchRows(tbl, f.recordBytes)
	pending := make(chan *client.AppendFuture, benchPipelineDepth)
	var wg sync.WaitGroup
	wg.Go(func() {
		for fut := range pending {
			if _, err := fut.Wait(drainCtx); err != nil {
				e.failed.Add(1)
			} else {
				e.acked.Add(1)
			}
		}
	})
	defer func() {
		close(pending)
		_ = w.Flush(drainCtx)
		wg.Wait()
	}()
	ticker := time.NewTicker(e2ePaceInterval)
	defer ticker.Stop()
	start := time.Now()
	var sent int64
	for {
		due := int64(time.Since(start).Seconds()*rate) - sent
		for ; due > 0; due-- {
			binary.BigEndian.PutUint64(rows.payload, uint64(time.Now().UnixNano()))
			row, err := rows.next(firstID + sent)
			sent++
			if err == nil {
				var fut *client.AppendFuture
				if fut, err = w.Append(runCtx, row); err == nil {
					pending <- fut
					continue
				}
			}
			if runCtx.Err() != nil {
				return
			}
			if !errors.Is(err, context.Canceled) {
				e.failed.Add(1)
			}
		}
		select {
		case <-runCtx.Done():
			return
		case <-ticker.C:
		}
	}
}
