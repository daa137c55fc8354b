package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
)

// e2ePaceInterval is how often an e2e writer appends what its rate makes
// due.
const e2ePaceInterval = time.Millisecond

// e2eWriters is the writing side of the e2e benchmark.
type e2eWriters struct {
	acked, failed atomic.Int64
	done          chan struct{} // closed when every record is acknowledged or failed
}

// benchE2E writes at rate for --duration, with the send time in each
// payload's first 8 bytes, while a scanner following every bucket from the
// latest offset times each record from Append to Poll.
func E2E(ctx context.Context, tbl *client.Table, f *Options, rate float64, timeout time.Duration) (Result, error) {
	s, err := tbl.NewLogScanner(client.LogScannerOptions{MaxWait: 100 * time.Millisecond})
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	for b := range tbl.Buckets() {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		off, err := tbl.ListOffset(tctx, b, client.Latest())
		cancel()
		if err != nil {
			return Result{}, err
		}
		if err := s.Subscribe(b, client.AtOffset(off)); err != nil {
			return Result{}, err
		}
	}
	w, err := tbl.NewAppendWriter(f.appendOptions())
	if err != nil {
		return Result{}, err
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.Duration+benchDrainTimeout)
	defer cancel()
	defer w.Close(drainCtx)

	start, cpu := time.Now(), markCPU(f.NodePIDs)
	writers := &e2eWriters{done: make(chan struct{})}
	var wg sync.WaitGroup
	runCtx, stop := context.WithTimeout(ctx, f.Duration)
	defer stop()
	for i := range f.Concurrency {
		wg.Go(func() { writers.run(runCtx, drainCtx, w, tbl, f, rate/float64(f.Concurrency), int64(i)<<40) })
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
			return Result{}, err
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
func (e *e2eWriters) run(runCtx, drainCtx context.Context, w *client.AppendWriter, tbl *client.Table, f *Options, rate float64, firstID int64) {
	rows := newBenchRows(tbl, f.RecordBytes, f.Partitions)
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
