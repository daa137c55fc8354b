package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// benchCaller is one benchmark goroutine's counts.
type benchCaller struct {
	done   int64 // acknowledged writes, or lookups that found their key
	misses int64 // lookups of absent keys
	errors int64
	// batches and batchRows count the acknowledged batches of the
	// caller's own writer, and their rows.
	batches, batchRows int64
	lat                *reservoir
	// acked, when set, counts the acknowledged writes of every caller of
	// the run as they come, for per-interval rates.
	acked *atomic.Int64
}

// benchRun is what runCallers measured.
type benchRun struct {
	done, misses, errors int64
	batches, batchRows   int64
	elapsed              time.Duration
	lat                  latencyStats
	cpu                  cpuUse // over elapsed
}

// runCallers runs --concurrency callers until --duration ends (run gets the
// run's context, its caller and its index), then sums their counts. An
// error from any caller fails the benchmark.
func runCallers(ctx context.Context, f *Options, run func(runCtx context.Context, c *benchCaller, i int) error) (benchRun, error) {
	runCtx, cancel := context.WithTimeout(ctx, f.Duration)
	defer cancel()
	callers := make([]*benchCaller, f.Concurrency)
	errs := make([]error, f.Concurrency)
	start, cpu := time.Now(), markCPU(f.NodePIDs)
	var wg sync.WaitGroup
	for i := range callers {
		c := &benchCaller{lat: newReservoir(maxLatencySamples / f.Concurrency)}
		callers[i] = c
		wg.Go(func() { errs[i] = run(runCtx, c, i) })
	}
	wg.Wait()
	r := benchRun{elapsed: time.Since(start), cpu: cpu.since()}
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	var rs []*reservoir
	for _, c := range callers {
		r.done += c.done
		r.misses += c.misses
		r.errors += c.errors
		r.batches += c.batches
		r.batchRows += c.batchRows
		rs = append(rs, c.lat)
	}
	r.lat = mergeLatencies(rs)
	return r, nil
}

// countError counts a failed call, unless the run was ending.
func (c *benchCaller) countError(runCtx context.Context) {
	if runCtx.Err() == nil {
		c.errors++
	}
}

// sentRow is a row handed to a writer: how to wait for its ack, and when
// it was sent.
type sentRow struct {
	wait func(context.Context) error
	t0   time.Time
}

// sendGroups sends rows in groups of batch until runCtx ends: send hands
// one row to a writer (false: nothing sent, already counted), flush sends
// what is buffered, and each row's latency runs from its send to its ack,
// awaited within drainCtx. Failed rows are counted, not returned.
func (c *benchCaller) sendGroups(runCtx, drainCtx context.Context, batch int, send func() (sentRow, bool), flush func(context.Context) error) {
	group := make([]sentRow, 0, batch)
	for runCtx.Err() == nil {
		group = group[:0]
		for range batch {
			if s, ok := send(); ok {
				group = append(group, s)
			}
		}
		_ = flush(drainCtx) // sends at once; errors are counted per row below
		for _, s := range group {
			if err := s.wait(drainCtx); err != nil {
				c.errors++
				continue
			}
			c.done++
			c.lat.add(time.Since(s.t0))
			if c.acked != nil {
				c.acked.Add(1)
			}
		}
	}
}
