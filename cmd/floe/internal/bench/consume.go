package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/arrowlog/clickstream"
)

// ConsumeOptions are what bench consume takes.
type ConsumeOptions struct {
	// Table is DB.TABLE, created with the clickstream schema (20 columns
	// of web analytics events) if missing.
	Table string
	// Records: the table is filled with generated events until it holds
	// at least this many, before the read is timed.
	Records int64
	// Buckets and Properties are those of a table the benchmark creates
	// (log.format, log.compression...).
	Buckets    int32
	Properties map[string]string
	// Columns are the columns read; empty: all.
	Columns []string
	// MaxBytes is the scanner's fetch size (0: its default).
	MaxBytes int
}

// ConsumeResult is what bench consume measured: one read of every bucket
// from its start to its high watermark.
type ConsumeResult struct {
	Table     string   `json:"table"`
	Format    string   `json:"log_format"`
	Columns   []string `json:"columns,omitempty"` // nil: all
	Records   int64    `json:"records"`
	Bytes     int64    `json:"bytes"` // record batches received
	DurationS float64  `json:"duration_s"`
	RecordsPS float64  `json:"records_per_s"`
	MBPerS    float64  `json:"mb_per_s"`
	// BytesPerRecord is what a record costs on the wire: stored bytes for
	// a read of every column.
	BytesPerRecord float64 `json:"bytes_per_record"`
}

// OpenClickTable creates o.Table with the clickstream schema if missing,
// each call within timeout, and opens it.
func OpenClickTable(ctx context.Context, c *client.Client, o *ConsumeOptions, timeout time.Duration) (*client.Table, error) {
	spec := client.TableSpec{Schema: clickstream.Schema().String(), Buckets: o.Buckets, Properties: o.Properties}
	tbl, err := ensureBenchTable(ctx, c, timeout, o.Table, spec)
	if err != nil {
		return nil, err
	}
	if !tbl.Schema().Equal(clickstream.Schema()) {
		return nil, fmt.Errorf("table %s exists with another schema than the clickstream's: %s", o.Table, tbl.Schema().String())
	}
	return tbl, nil
}

// Fill appends generated events until the table holds at least o.Records
// (counting every bucket's end offset), reporting progress to progress
// (nil: none). Its writer batches freely: the fill is not timed.
func Fill(ctx context.Context, tbl *client.Table, o *ConsumeOptions, timeout time.Duration, progress func(done, total int64)) error {
	have, err := endOffsets(ctx, tbl, timeout)
	if err != nil {
		return err
	}
	if have >= o.Records {
		return nil
	}
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Acks: client.AcksAll})
	if err != nil {
		return err
	}
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchDrainTimeout)
	defer cancel()
	defer w.Close(drainCtx)
	gen := clickstream.New(uint64(have) + 1)
	var row []byte
	for n := have; n < o.Records; n++ {
		row = gen.Row(row[:0])
		if _, err := w.Append(ctx, row); err != nil {
			return err
		}
		if progress != nil && n%100_000 == 0 {
			progress(n, o.Records)
		}
	}
	if err := w.Flush(ctx); err != nil {
		return err
	}
	if st := w.Stats(); st.Failed > 0 {
		return fmt.Errorf("fill: %d of the events failed", st.Failed)
	}
	return nil
}

// endOffsets sums the buckets' latest offsets.
func endOffsets(ctx context.Context, tbl *client.Table, timeout time.Duration) (int64, error) {
	var n int64
	for b := range tbl.Buckets() {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		off, err := tbl.ListOffset(tctx, b, client.Latest())
		cancel()
		if err != nil {
			return 0, err
		}
		n += off
	}
	return n, nil
}

// Consume reads every bucket of tbl from its earliest offset to the high
// watermark it had when the read began, with o.Columns, and times it.
func Consume(ctx context.Context, tbl *client.Table, o *ConsumeOptions, timeout time.Duration) (ConsumeResult, error) {
	res := ConsumeResult{Table: o.Table, Format: tbl.LogFormat(), Columns: o.Columns}
	s, err := tbl.NewLogScanner(client.LogScannerOptions{Columns: o.Columns, MaxBytes: o.MaxBytes})
	if err != nil {
		return res, err
	}
	defer s.Close()
	ends := make(map[int32]int64)
	for b := range tbl.Buckets() {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		end, err := tbl.ListOffset(tctx, b, client.Latest())
		cancel()
		if err != nil {
			return res, err
		}
		if end == 0 {
			continue
		}
		ends[b] = end
		if err := s.Subscribe(b, client.Earliest()); err != nil {
			return res, err
		}
	}
	start := time.Now()
	for len(ends) > 0 {
		recs, err := s.Poll(ctx)
		if err != nil {
			return res, err
		}
		for _, r := range recs {
			res.Records++
			if r.Offset+1 >= ends[r.Bucket] {
				delete(ends, r.Bucket)
				s.Unsubscribe(r.Bucket)
			}
		}
	}
	elapsed := time.Since(start)
	res.Bytes = s.Stats().Bytes
	res.DurationS = elapsed.Seconds()
	secs := max(elapsed.Seconds(), 1e-9)
	res.RecordsPS = float64(res.Records) / secs
	res.MBPerS = float64(res.Bytes) / 1e6 / secs
	if res.Records > 0 {
		res.BytesPerRecord = float64(res.Bytes) / float64(res.Records)
	}
	return res, nil
}

// PrintConsume writes a consume result: a table for people, then its JSON
// object on the last line for scripts; with jsonOnly just the JSON.
func PrintConsume(w io.Writer, title string, res ConsumeResult, jsonOnly bool) error {
	js, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if jsonOnly {
		_, err := fmt.Fprintf(w, "%s\n", js)
		return err
	}
	cols := "all"
	if len(res.Columns) > 0 {
		cols = strings.Join(res.Columns, ",")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", title)
	for _, row := range [][2]string{
		{"log format", res.Format},
		{"columns", cols},
		{"records", fmt.Sprint(res.Records)},
		{"duration", fmt.Sprintf("%.2fs", res.DurationS)},
		{"records/s", fmt.Sprintf("%.0f", res.RecordsPS)},
		{"bytes received", fmt.Sprint(res.Bytes)},
		{"bytes/record", fmt.Sprintf("%.1f", res.BytesPerRecord)},
		{"MB/s", fmt.Sprintf("%.1f", res.MBPerS)},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", js)
	return err
}
