package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/fanout"
)

// Defaults and limits of floe table export and import.
const (
	defaultBulkConcurrency = 4
	maxBulkConcurrency     = 64
)

// exportChunkBytes is how much of one bucket's output gathers before it goes
// to the shared output in one write.
const exportChunkBytes = 64 << 10

// exportOptions are the flags of floe table export.
type exportOptions struct {
	file        string // "" or "-": stdout
	snapshot    bool
	from        client.StartPosition
	buckets     []int32 // nil: all
	concurrency int     // buckets read at once
}

// tableExportCmd writes a table's records, or a primary-key table's current
// rows, as JSON lines.
func tableExportCmd(env *cliEnv) clientCmd {
	var from, buckets string
	var o exportOptions
	return clientCmd{summary: "write a table's records (or a primary-key table's rows) to a file as JSON lines", nargs: 1, streaming: true, arg: argTable,
		usage: "table export DB.TABLE [--file F] [--snapshot] [--from earliest|latest|offset=N|timestamp=T] [--buckets 0,2] [--concurrency N]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.file, "file", "", "write to this file (replaced once the export is complete) instead of stdout")
			fs.BoolVar(&o.snapshot, "snapshot", false, "primary-key tables: the current rows, not the changelog")
			fs.StringVar(&from, "from", "", "logs: where each bucket starts: earliest (default), latest, offset=N or timestamp=T; the export ends at the high watermarks of its start")
			fs.StringVar(&buckets, "buckets", "", "comma-separated buckets to export (default: all)")
			fs.IntVar(&o.concurrency, "concurrency", defaultBulkConcurrency, "buckets read at once")
		},
		check: func(pos []string) error {
			var err error
			switch {
			case o.snapshot && from != "":
				return fmt.Errorf("%w: --snapshot exports the current rows; --from is for logs", errUsage)
			case from == "":
				o.from = client.Earliest()
			default:
				if o.from, err = parseFrom(from); err != nil {
					return err
				}
			}
			if o.concurrency < 1 || o.concurrency > maxBulkConcurrency {
				return fmt.Errorf("%w: --concurrency must be from 1 to %d", errUsage, maxBulkConcurrency)
			}
			o.buckets, err = parseBuckets(buckets)
			return err
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			return export(ctx, env, cf, tbl, o)
		}}
}

// export writes what src reads to the output, then the summary.
func export(ctx context.Context, env *cliEnv, cf *clientFlags, tbl *client.Table, o exportOptions) error {
	src, noun, err := exportSourceFor(ctx, tbl, o, cf.timeout)
	if err != nil {
		return err
	}
	out, err := openExportOutput(env, o.file)
	if err != nil {
		return err
	}
	sink := &exportSink{w: out.w}
	name := qualifiedName(tbl)
	total := src.offsets()
	p := startProgress(env.stderr, func(elapsed time.Duration) string {
		return sink.progress(name, noun, len(src.buckets()), total, elapsed)
	})
	start := time.Now()
	err = runExport(ctx, src, sink, o.concurrency)
	p.stop()
	if err != nil {
		out.abort()
		lines := sink.lines.Load()
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return fmt.Errorf("interrupted after %s%s", plural(lines, noun), out.notWritten())
		}
		return fmt.Errorf("export stopped after %s%s: %w", plural(lines, noun), out.notWritten(), err)
	}
	if err := out.commit(); err != nil {
		return err
	}
	printExportSummary(env, cf, name, noun, len(src.buckets()), sink, time.Since(start))
	return nil
}

// qualifiedName is the table's DB.TABLE name.
func qualifiedName(tbl *client.Table) string {
	info := tbl.Info()
	return info.Database + "." + info.Name
}

// exportSourceFor is the source of the export o asks for, and the noun of
// what it exports.
func exportSourceFor(ctx context.Context, tbl *client.Table, o exportOptions, timeout time.Duration) (exportSource, string, error) {
	buckets, err := tableBuckets(tbl, o.buckets)
	if err != nil {
		return nil, "", err
	}
	pk := len(tbl.Info().PrimaryKey) > 0
	if o.snapshot {
		if !pk {
			return nil, "", fmt.Errorf("%w: --snapshot needs a primary-key table; %s is a log table (export its records without --snapshot)", errUsage, qualifiedName(tbl))
		}
		return &snapshotSource{tbl: tbl, order: buckets, opts: client.RowScannerOptions{Timeout: timeout}}, "row", nil
	}
	// Every bucket's end is fixed before anything is read: the export
	// ends, and it is what the table held when it began.
	ranges, err := resolveRanges(ctx, tbl, buckets, o.from, false, timeout)
	if err != nil {
		return nil, "", err
	}
	noun := "record"
	if pk {
		noun = "changelog record"
	}
	return newLogSource(tbl, buckets, ranges), noun, nil
}

// runExport reads the buckets of src, concurrency at a time, into sink. The
// first bucket that fails stops the others.
func runExport(ctx context.Context, src exportSource, sink *exportSink, concurrency int) error {
	return fanout.FirstError(ctx, src.buckets(), concurrency, func(ctx context.Context, b int32) error {
		out := &bucketOut{sink: sink}
		err := src.read(ctx, b, out)
		if err == nil {
			err = out.flush()
		}
		if err != nil {
			return fmt.Errorf("bucket %d: %w", b, err)
		}
		sink.bucketsDone.Add(1)
		return nil
	})
}

// exportSink is the output the buckets of an export share, and its counts.
type exportSink struct {
	mu sync.Mutex // one chunk written at a time
	w  interface{ Write([]byte) (int, error) }

	lines, bytes, offsets, bucketsDone atomic.Int64
}

// write writes one chunk of a bucket's lines.
func (s *exportSink) write(chunk []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(chunk)
	s.bytes.Add(int64(n))
	return err
}

// progress is the export's progress line.
func (s *exportSink) progress(table, noun string, buckets int, totalOffsets int64, elapsed time.Duration) string {
	lines := s.lines.Load()
	line := fmt.Sprintf("export %s: ", table)
	if totalOffsets > 0 {
		line += fmt.Sprintf("%.1f%%, ", 100*float64(s.offsets.Load())/float64(totalOffsets))
	}
	return line + fmt.Sprintf("%s, %.1f MB, %d/%d buckets done, %.0f %ss/s, %v", plural(lines, noun),
		megabytes(s.bytes.Load()), s.bucketsDone.Load(), buckets, rate(lines, elapsed), noun, elapsed.Round(time.Second))
}

// bucketOut gathers one bucket's lines and hands them to the sink a chunk
// at a time: buckets read in parallel interleave whole chunks, and each
// bucket's lines stay in its order.
type bucketOut struct {
	sink *exportSink
	buf  []byte
}

// add adds one line, its newline included.
func (o *bucketOut) add(line []byte) error {
	o.buf = append(o.buf, line...)
	o.sink.lines.Add(1)
	if len(o.buf) >= exportChunkBytes {
		return o.flush()
	}
	return nil
}

// flush writes the lines gathered.
func (o *bucketOut) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	err := o.sink.write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// advance counts n more log offsets done, for progress.
func (o *bucketOut) advance(n int64) { o.sink.offsets.Add(n) }

func printExportSummary(env *cliEnv, cf *clientFlags, table, noun string, buckets int, sink *exportSink, elapsed time.Duration) {
	lines, bytes := sink.lines.Load(), sink.bytes.Load()
	if cf.output == "json" {
		b, _ := json.Marshal(map[string]any{"table": table, "what": noun + "s", "rows": lines, "bytes": bytes, "buckets": buckets,
			"seconds": elapsed.Seconds(), "rows_per_s": rate(lines, elapsed), "mb_per_s": rate(bytes, elapsed) / 1e6})
		fmt.Fprintln(env.stderr, string(b))
		return
	}
	fmt.Fprintf(env.stderr, "exported %s of %s from %s, %d bytes in %v (%.0f %ss/s, %.1f MB/s)\n", plural(lines, noun), table,
		plural(int64(buckets), "bucket"), bytes, elapsed.Round(time.Millisecond), rate(lines, elapsed), noun, rate(bytes, elapsed)/1e6)
}
