package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

func benchUpsertCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	return clientCmd{name: "bench upsert", streaming: true,
		usage: "bench upsert [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--keys 1000000] [--record-bytes 1024] [--acks all] [--batch 1]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.IntVar(&f.batch, "batch", 1, "rows each goroutine upserts before waiting for their acks (1: one row at a time)")
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
			tbl, err := openKVBenchTable(ctx, c, cf, &f)
			if err != nil {
				return err
			}
			res, err := benchUpsert(ctx, tbl, &f)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench upsert: %s, %d writers, %d random keys, %d-byte values, acks=%s, batch %d",
				f.table, f.concurrency, f.keys, f.recordBytes, f.ackMode, f.batch)
			return printBenchResult(env, title, res)
		}}
}

// benchUpsert runs the writers for --duration and waits for their acks.
func benchUpsert(ctx context.Context, tbl *client.Table, f *kvBenchFlags) (benchResult, error) {
	runCtx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()
	workers := make([]*produceWorker, f.concurrency)
	errs := make([]error, f.concurrency)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		pw := &produceWorker{lat: newReservoir(maxLatencySamples / f.concurrency)}
		workers[i] = pw
		wg.Go(func() { errs[i] = pw.upsert(ctx, runCtx, tbl, f) })
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
	return newBenchResult("upsert", &f.benchFlags, acked, failed, elapsed, mergeLatencies(rs)), nil
}

// upsert writes random keys in groups of --batch until runCtx ends, waiting
// for each group's acks (bounded by benchDrainTimeout). Errors of single
// rows are counted, not returned.
func (pw *produceWorker) upsert(ctx, runCtx context.Context, tbl *client.Table, f *kvBenchFlags) error {
	w, err := tbl.NewUpsertWriter(client.UpsertWriterOptions{Acks: f.ackMode, Linger: f.linger})
	if err != nil {
		return err
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.duration+benchDrainTimeout)
	defer cancel()
	defer w.Close(drainCtx)
	rows, err := newKVRows(tbl, f.recordBytes)
	if err != nil {
		return err
	}
	type sent struct {
		fut *client.UpsertFuture
		t0  time.Time
	}
	group := make([]sent, 0, f.batch)
	for runCtx.Err() == nil {
		group = group[:0]
		for range f.batch {
			row, err := rows.rowOf(rand.Int64N(f.keys))
			if err != nil {
				pw.errors++
				continue
			}
			t0 := time.Now()
			fut, err := w.Upsert(runCtx, row)
			if err != nil {
				if runCtx.Err() == nil {
					pw.errors++
				}
				continue
			}
			group = append(group, sent{fut, t0})
		}
		_ = w.Flush(drainCtx) // sends at once; errors are counted per row below
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
