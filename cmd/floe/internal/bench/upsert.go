package bench

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/floedb/floe/client"
)

// Upsert runs the writers on tbl, a table of KVSchema, for f.Duration and
// waits for their acks, calling report after every
// sf.Interval with the interval's end and its rate.
func Upsert(ctx context.Context, tbl *client.Table, f *KVOptions, sf *SustainOptions, report func(time.Duration, float64)) (Result, error) {
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.Duration+benchDrainTimeout)
	defer cancel()
	var shared *client.UpsertWriter
	if f.SharedWriter {
		var err error
		if shared, err = tbl.NewUpsertWriter(f.upsertOptions()); err != nil {
			return Result{}, err
		}
		defer shared.Close(drainCtx)
	}
	rowBytes, err := kvRowBytes(tbl, f.RecordBytes)
	if err != nil {
		return Result{}, err
	}
	var live *keySet
	if len(sf.KVDirs) > 0 {
		live = newKeySet(f.Keys)
		if f.Load {
			live.addAll(f.Keys)
		}
	}
	meter := startIntervalMeter(ctx, sf.Interval, f.Duration, report)
	r, err := runCallers(ctx, &f.Options, func(runCtx context.Context, c *benchCaller, _ int) error {
		c.acked = &meter.acked
		return upsertRows(runCtx, drainCtx, c, tbl, f, shared, live)
	})
	rates := meter.wait()
	if err != nil {
		return Result{}, err
	}
	res := newBenchResult("upsert", &f.Options, r.done, r.errors, r.elapsed, r.lat, r.cpu)
	if sf.Interval > 0 || len(sf.KVDirs) > 0 {
		s := &SustainedResult{IntervalS: sf.Interval.Seconds(), IntervalOpsPerS: rates}
		s.compareWindows(sf.Interval, sf.Window)
		if err := s.sizeDirs(sf.KVDirs, live, rowBytes); err != nil {
			return Result{}, err
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
func upsertRows(runCtx, drainCtx context.Context, c *benchCaller, tbl *client.Table, f *KVOptions, shared *client.UpsertWriter, live *keySet) error {
	w, flush := shared, func(context.Context) error { return nil }
	if w == nil {
		var err error
		if w, err = tbl.NewUpsertWriter(f.upsertOptions()); err != nil {
			return err
		}
		defer w.Close(drainCtx)
		flush = w.Flush
	}
	rows, err := newKVRows(tbl, f.RecordBytes)
	if err != nil {
		return err
	}
	c.sendGroups(runCtx, drainCtx, f.Batch, func() (sentRow, bool) {
		key := rand.Int64N(f.Keys)
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
