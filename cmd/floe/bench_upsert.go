package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/floedb/floe/client"
)

func benchUpsertCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var sf sustainFlags
	return clientCmd{summary: "upsert throughput and latency of a primary-key table", streaming: true,
		usage: "bench upsert [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--keys 1000000] [--record-bytes 1024] [--acks all] [--batch 1] [--shared-writer] [--load] [--interval 10s] [--window 20s] [--kv-dir DIR,...]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			f.registerLoad(fs)
			sf.register(fs)
			fs.IntVar(&f.batch, "batch", 1, "rows each goroutine upserts before waiting for their acks (1: one row at a time)")
			fs.BoolVar(&f.sharedWriter, "shared-writer", false,
				"the goroutines share one writer, as a service's request handlers would: it batches their rows, sending a bucket's batch when it fills or --linger after its first row")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if err := sf.validate(f.keys); err != nil {
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
			if err := f.loadIfAsked(ctx, env.stderr, tbl); err != nil {
				return err
			}
			res, err := benchUpsert(ctx, tbl, &f, &sf, intervalReporter(env.stderr, sf.dirs))
			if err != nil {
				return err
			}
			writers := fmt.Sprintf("%d writers", f.concurrency)
			if f.sharedWriter {
				writers = fmt.Sprintf("%d callers sharing one writer", f.concurrency)
			}
			title := fmt.Sprintf("floe bench upsert: %s, %s, %d random keys, %d-byte values, acks=%s, batch %d",
				f.table, writers, f.keys, f.recordBytes, f.ackMode, f.batch)
			return printBenchResult(env, cf, title, res)
		}}
}

// benchUpsert runs the writers for --duration and waits for their acks,
// calling report after every --interval.
func benchUpsert(ctx context.Context, tbl *client.Table, f *kvBenchFlags, sf *sustainFlags, report func(time.Duration, float64)) (benchResult, error) {
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.duration+benchDrainTimeout)
	defer cancel()
	var shared *client.UpsertWriter
	if f.sharedWriter {
		var err error
		if shared, err = tbl.NewUpsertWriter(f.upsertOptions()); err != nil {
			return benchResult{}, err
		}
		defer shared.Close(drainCtx)
	}
	rowBytes, err := kvRowBytes(tbl, f.recordBytes)
	if err != nil {
		return benchResult{}, err
	}
	var live *keySet
	if len(sf.dirs) > 0 {
		live = newKeySet(f.keys)
		if f.load {
			live.addAll(f.keys)
		}
	}
	meter := startIntervalMeter(ctx, sf.interval, f.duration, report)
	r, err := runCallers(ctx, &f.benchFlags, func(runCtx context.Context, c *benchCaller, _ int) error {
		c.acked = &meter.acked
		return upsertRows(runCtx, drainCtx, c, tbl, f, shared, live)
	})
	rates := meter.wait()
	if err != nil {
		return benchResult{}, err
	}
	res := newBenchResult("upsert", &f.benchFlags, r.done, r.errors, r.elapsed, r.lat, r.cpu)
	if sf.interval > 0 || len(sf.dirs) > 0 {
		s := &sustainedResult{IntervalS: sf.interval.Seconds(), IntervalOpsPerS: rates}
		s.compareWindows(sf.interval, sf.window)
		if err := s.sizeDirs(sf.dirs, live, rowBytes); err != nil {
			return benchResult{}, err
		}
		res.Sustained = s
	}
	return res, nil
}

// kvRowBytes is the size of the benchmark's encoded rows, the same for
// every key.
func kvRowBytes(tbl *client.Table, valueBytes int) (int, error) {
	rows, err := newKVRows(tbl, valueBytes)
	if err != nil {
		return 0, err
	}
	row, err := rows.rowOf(0)
	return len(row), err
}

// upsertRows writes random keys in groups of --batch until runCtx ends,
// waiting for each group's acks within drainCtx, and adds each
// acknowledged key to live (nil: none). Errors of single rows are counted,
// not returned. With a shared writer it leaves sending to the writer's
// linger; with its own, it flushes each group.
func upsertRows(runCtx, drainCtx context.Context, c *benchCaller, tbl *client.Table, f *kvBenchFlags, shared *client.UpsertWriter, live *keySet) error {
	w, flush := shared, func(context.Context) error { return nil }
	if w == nil {
		var err error
		if w, err = tbl.NewUpsertWriter(f.upsertOptions()); err != nil {
			return err
		}
		defer w.Close(drainCtx)
		flush = w.Flush
	}
	rows, err := newKVRows(tbl, f.recordBytes)
	if err != nil {
		return err
	}
	c.sendGroups(runCtx, drainCtx, f.batch, func() (sentRow, bool) {
		key := rand.Int64N(f.keys)
		row, err := rows.rowOf(key)
		if err != nil {
			c.errors++
			return sentRow{}, false
		}
		t0 := time.Now()
		fut, err := w.Upsert(runCtx, row)
		if err != nil {
			c.countError(runCtx)
			return sentRow{}, false
		}
		return sentRow{func(ctx context.Context) error {
			_, err := fut.Wait(ctx)
			if err == nil && live != nil {
				live.add(key)
			}
			return err
		}, t0}, true
	}, flush)
	return nil
}
