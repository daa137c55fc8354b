package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/time/rate"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/arrowlog/clickstream"
)

// LakeOptions are what bench lake takes.
type LakeOptions struct {
	// Table is DB.TABLE: a clickstream table, created lake-enabled if
	// missing, its datalake.freshness set to Freshness.
	Table     string
	Freshness time.Duration
	Buckets   int32
	// Duration is how long events are written, at Rate a second.
	Duration time.Duration
	Rate     float64
	// Wait bounds the wait for the lake after the writes (0: freshness
	// and a minute).
	Wait time.Duration
}

// LakeResult is what bench lake measured: how long after a moment of the
// writes the lake held every record written before it.
type LakeResult struct {
	Table      string  `json:"table"`
	FreshnessS float64 `json:"freshness_s"`
	Records    int64   `json:"records"`
	RecordsPS  float64 `json:"records_per_s"`
	Samples    int     `json:"samples"`
	// DelayP50S and DelayMaxS: of each sample (the buckets' high
	// watermarks once a second), the time until the lake's committed
	// offsets reached them.
	DelayP50S float64 `json:"delay_p50_s"`
	DelayMaxS float64 `json:"delay_max_s"`
	// Missed is the samples the lake never reached within the wait.
	Missed int `json:"missed"`
}

// lakeSample is the buckets' high watermarks at a moment of the writes.
type lakeSample struct {
	at  time.Time
	hws []int64
}

// Lake writes clickstream events into a lake-enabled table at a steady
// rate and measures the lake's freshness: once a second it notes every
// bucket's high watermark, and watches (through the table's metadata,
// four times a second) for the moment the lake's committed offsets reach
// them all.
func Lake(ctx context.Context, c *client.Client, o *LakeOptions, timeout time.Duration, progress func(string)) (LakeResult, error) {
	res := LakeResult{Table: o.Table, FreshnessS: o.Freshness.Seconds()}
	props := map[string]string{"datalake.enabled": "true", "datalake.freshness": o.Freshness.String()}
	tbl, err := ensureBenchTable(ctx, c, timeout, o.Table, client.TableSpec{Schema: clickstream.Schema().String(), Buckets: o.Buckets, Properties: props})
	if err != nil {
		return res, err
	}
	info := tbl.Info()
	if len(info.PartitionKeys) > 0 {
		return res, fmt.Errorf("table %s is partitioned: bench lake measures a table of its own buckets", o.Table)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	_, err = c.Admin().AlterTable(actx, info.Database, info.Name, client.AlterTable{Set: props})
	cancel()
	if err != nil {
		return res, err
	}
	hws := func() ([]int64, error) {
		out := make([]int64, tbl.Buckets())
		for b := range tbl.Buckets() {
			tctx, cancel := context.WithTimeout(ctx, timeout)
			off, err := tbl.ListOffset(tctx, b, client.Latest())
			cancel()
			if err != nil {
				return nil, fmt.Errorf("the high watermark of bucket %d: %w", b, err)
			}
			out[b] = off
		}
		return out, nil
	}
	lakeOffsets := func() ([]int64, error) {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		d, err := c.Admin().DescribeTable(tctx, info.Database, info.Name)
		if err != nil {
			return nil, fmt.Errorf("the lake's offsets: %w", err)
		}
		out := make([]int64, tbl.Buckets())
		for _, b := range d.Placement {
			if int(b.Bucket) < len(out) {
				out[b.Bucket] = b.LakeOffset
			}
		}
		return out, nil
	}

	// The writer.
	wctx, stopWriting := context.WithTimeout(ctx, o.Duration)
	defer stopWriting()
	writeErr := make(chan error, 1)
	go func() {
		writeErr <- writeAtRate(ctx, wctx, tbl, o.Rate, &res.Records)
	}()

	var pending, done []lakeSample
	var delays []time.Duration
	sampleTick := time.NewTicker(time.Second)
	defer sampleTick.Stop()
	watchTick := time.NewTicker(250 * time.Millisecond)
	defer watchTick.Stop()
	started := time.Now()
	writing := true
	wait := o.Wait
	if wait <= 0 {
		wait = o.Freshness + time.Minute
	}
	var deadline time.Time
	for writing || len(pending) > 0 {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case err := <-writeErr:
			if err != nil {
				return res, fmt.Errorf("writing: %w", err)
			}
			writing, deadline = false, time.Now().Add(wait)
			res.RecordsPS = float64(res.Records) / time.Since(started).Seconds()
			// The last moment of the writes is a sample too.
			h, err := hws()
			if err != nil {
				return res, err
			}
			pending = append(pending, lakeSample{at: time.Now(), hws: h})
		case now := <-sampleTick.C:
			if !writing {
				continue
			}
			h, err := hws()
			if err != nil {
				return res, err
			}
			pending = append(pending, lakeSample{at: now, hws: h})
		case now := <-watchTick.C:
			lo, err := lakeOffsets()
			if err != nil {
				return res, err
			}
			kept := pending[:0]
			for _, s := range pending {
				reached := true
				for b, hw := range s.hws {
					if lo[b] < hw {
						reached = false
					}
				}
				if reached {
					delays = append(delays, now.Sub(s.at))
					done = append(done, s)
				} else {
					kept = append(kept, s)
				}
			}
			pending = kept
			if progress != nil && now.Second()%5 == 0 && now.Nanosecond() < 250e6 {
				progress(fmt.Sprintf("%d records written, %d samples in the lake, %d waiting", res.Records, len(done), len(pending)))
			}
			if !writing && time.Now().After(deadline) {
				res.Missed = len(pending)
				pending = nil
			}
		}
	}
	res.Samples = len(delays) + res.Missed
	if len(delays) > 0 {
		slices.Sort(delays)
		res.DelayP50S = delays[len(delays)/2].Seconds()
		res.DelayMaxS = delays[len(delays)-1].Seconds()
	}
	return res, nil
}

// writeAtRate appends clickstream events to tbl at rate a second until
// until ends, counting them in n, and flushes them (within ctx).
func writeAtRate(ctx, until context.Context, tbl *client.Table, perSecond float64, n *int64) error {
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchDrainTimeout)
		defer cancel()
		w.Close(closeCtx)
	}()
	lim := rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/100)))
	gen := clickstream.New(uint64(time.Now().UnixNano()))
	var row []byte
	for lim.Wait(until) == nil {
		row = gen.Row(row[:0])
		if _, err := w.Append(ctx, row); err != nil {
			return fmt.Errorf("append after %d events: %w", *n, err)
		}
		*n++
	}
	drainCtx, cancel := context.WithTimeout(ctx, benchDrainTimeout)
	defer cancel()
	if err := w.Flush(drainCtx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if st := w.Stats(); st.Failed > 0 {
		return fmt.Errorf("%d of the events failed", st.Failed)
	}
	return nil
}

// PrintLake writes a lake result: a table for people, then its JSON object
// on the last line for scripts; with jsonOnly just the JSON.
func PrintLake(w io.Writer, title string, res LakeResult, jsonOnly bool) error {
	js, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if !jsonOnly {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\n", title)
		for _, row := range [][2]string{
			{"datalake.freshness", fmt.Sprintf("%gs", res.FreshnessS)},
			{"records", fmt.Sprintf("%d (%.0f/s)", res.Records, res.RecordsPS)},
			{"samples", fmt.Sprint(res.Samples)},
			{"lake delay p50", fmt.Sprintf("%.1fs", res.DelayP50S)},
			{"lake delay max", fmt.Sprintf("%.1fs", res.DelayMaxS)},
			{"never in the lake", fmt.Sprint(res.Missed)},
		} {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "%s\n", strings.TrimSpace(string(js)))
	return err
}
