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

func benchLookupCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var linearizable bool
	return clientCmd{summary: "lookup throughput and latency of a primary-key table", streaming: true,
		usage: "bench lookup [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--keys 1000000] [--batch 1] [--load] [--linearizable]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.IntVar(&f.batch, "batch", 1, "keys per LookupBatch call (1: single-key Lookup calls, which one lookuper coalesces)")
			f.registerLoad(fs)
			fs.BoolVar(&linearizable, "linearizable", false, "linearizable lookups")
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
			if err := f.loadIfAsked(ctx, env.stderr, tbl); err != nil {
				return err
			}
			res, err := benchLookup(ctx, tbl, &f, linearizable)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench lookup: %s, %d callers, %d random keys, batch %d, linearizable=%v (records: keys looked up)",
				f.table, f.concurrency, f.keys, f.batch, linearizable)
			return printBenchResult(env, cf, title, res)
		}}
}

// loadKeys upserts every key once, --concurrency writers splitting them.
func loadKeys(ctx context.Context, tbl *client.Table, f *kvBenchFlags) error {
	errs := make([]error, f.concurrency)
	per := (f.keys + int64(f.concurrency) - 1) / int64(f.concurrency)
	var wg sync.WaitGroup
	for i := range f.concurrency {
		from, to := int64(i)*per, min(int64(i+1)*per, f.keys)
		wg.Go(func() { errs[i] = loadRange(ctx, tbl, f, from, to) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func loadRange(ctx context.Context, tbl *client.Table, f *kvBenchFlags, from, to int64) error {
	w, err := tbl.NewUpsertWriter(f.upsertOptions())
	if err != nil {
		return err
	}
	rows, err := newKVRows(tbl, f.recordBytes)
	if err != nil {
		return err
	}
	for i := from; i < to; i++ {
		row, err := rows.rowOf(i)
		if err == nil {
			_, err = w.Upsert(ctx, row)
		}
		if err != nil {
			return errors.Join(err, w.Close(ctx))
		}
	}
	return w.Close(ctx)
}

// benchLookup runs the callers for --duration over one shared lookuper.
func benchLookup(ctx context.Context, tbl *client.Table, f *kvBenchFlags, linearizable bool) (benchResult, error) {
	l, err := tbl.NewLookuper(client.LookuperOptions{Linearizable: linearizable, Timeout: benchDrainTimeout})
	if err != nil {
		return benchResult{}, err
	}
	defer l.Close()
	r, err := runCallers(ctx, &f.benchFlags, func(runCtx context.Context, c *benchCaller, _ int) error {
		return lookupKeys(runCtx, c, l, tbl, f)
	})
	if err != nil {
		return benchResult{}, err
	}
	res := newBenchResult("lookup", &f.benchFlags, r.done+r.misses, r.errors, r.elapsed, r.lat, r.cpu)
	res.MBPerS = float64(r.done) * float64(f.recordBytes) / 1e6 / max(r.elapsed.Seconds(), 1e-9)
	res.Misses = &r.misses
	return res, nil
}

// lookupKeys looks up random keys until runCtx ends: one Lookup call at a
// time, or LookupBatch calls of --batch keys. Latency is per call.
func lookupKeys(runCtx context.Context, c *benchCaller, l *client.Lookuper, tbl *client.Table, f *kvBenchFlags) error {
	rows, err := newKVRows(tbl, 0)
	if err != nil {
		return err
	}
	keys := make([][]byte, f.batch)
	for runCtx.Err() == nil {
		for i := range keys {
			if keys[i], err = rows.keyOf(rand.Int64N(f.keys)); err != nil {
				return err
			}
		}
		t0 := time.Now()
		var found []bool
		if f.batch == 1 {
			_, ok, err := l.Lookup(runCtx, keys[0])
			if err != nil {
				c.countError(runCtx)
				continue
			}
			found = []bool{ok}
		} else {
			got, err := l.LookupBatch(runCtx, keys)
			if err != nil {
				c.countError(runCtx)
				continue
			}
			for _, row := range got {
				found = append(found, row != nil)
			}
		}
		c.lat.add(time.Since(t0))
		for _, ok := range found {
			if ok {
				c.done++
			} else {
				c.misses++
			}
		}
	}
	return nil
}
