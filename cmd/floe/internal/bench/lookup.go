package bench

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/floedb/floe/client"
)

// LoadKeys upserts every key of [0, f.Keys) once into tbl, a table of
// KVSchema, f.Concurrency writers splitting them.
func LoadKeys(ctx context.Context, tbl *client.Table, f *KVOptions) error {
	errs := make([]error, f.Concurrency)
	per := (f.Keys + int64(f.Concurrency) - 1) / int64(f.Concurrency)
	var wg sync.WaitGroup
	for i := range f.Concurrency {
		from, to := int64(i)*per, min(int64(i+1)*per, f.Keys)
		wg.Go(func() { errs[i] = loadRange(ctx, tbl, f, from, to) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func loadRange(ctx context.Context, tbl *client.Table, f *KVOptions, from, to int64) error {
	w, err := tbl.NewUpsertWriter(f.upsertOptions())
	if err != nil {
		return err
	}
	rows, err := newKVRows(tbl, f.RecordBytes)
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

// Lookup runs the callers on tbl, a table of KVSchema, for f.Duration over
// one shared lookuper.
func Lookup(ctx context.Context, tbl *client.Table, f *KVOptions, linearizable bool) (Result, error) {
	l, err := tbl.NewLookuper(client.LookuperOptions{Linearizable: linearizable, Timeout: benchDrainTimeout})
	if err != nil {
		return Result{}, err
	}
	defer l.Close()
	r, err := runCallers(ctx, &f.Options, func(runCtx context.Context, c *benchCaller, _ int) error {
		return lookupKeys(runCtx, c, l, tbl, f)
	})
	if err != nil {
		return Result{}, err
	}
	res := newBenchResult("lookup", &f.Options, r.done+r.misses, r.errors, r.elapsed, r.lat, r.cpu)
	res.MBPerS = float64(r.done) * float64(f.RecordBytes) / 1e6 / max(r.elapsed.Seconds(), 1e-9)
	res.Misses = &r.misses
	return res, nil
}

// lookupKeys looks up random keys until runCtx ends: one Lookup call at a
// time, or LookupBatch calls of --batch keys. Latency is per call.
func lookupKeys(runCtx context.Context, c *benchCaller, l *client.Lookuper, tbl *client.Table, f *KVOptions) error {
	rows, err := newKVRows(tbl, 0)
	if err != nil {
		return err
	}
	keys := make([][]byte, f.Batch)
	for runCtx.Err() == nil {
		for i := range keys {
			if keys[i], err = rows.keyOf(rand.Int64N(f.Keys)); err != nil {
				return err
			}
		}
		t0 := time.Now()
		var found []bool
		if f.Batch == 1 {
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
