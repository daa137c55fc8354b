package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
)

// Defaults and limits of floe table export and import.
const (
	defaultBulkConcurrency = 4
	maxBulkConcurrency     = 64
)

// exportOptions are the flags of floe table export.
type exportOptions struct {
	file        string // "" or "-": stdout
	snapshot    bool
	from        client.StartPosition
	buckets     []int32 // nil: all
	concurrency int     // buckets read at once
	columns     []string
	partitions  []string // filters of a partitioned table's partitions; nil: all
}

// tableExportCmd writes a table's records, or a primary-key table's current
// rows, as JSON lines.
func tableExportCmd(env *cliEnv) clientCmd {
	var from, buckets, columns string
	var o exportOptions
	var partitions stringList
	return clientCmd{summary: "write a table's records (or a primary-key table's rows) to a file as JSON lines", nargs: 1, streaming: true, arg: argTable,
		usage: "table export DB.TABLE [--file F] [--snapshot] [--from earliest|earliest-in-log|latest|offset=N|timestamp=T] [--buckets 0,2] [--columns a,b] [--partition dt=X]... [--concurrency N]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.file, "file", "", "write to this file (replaced once the export is complete) instead of stdout")
			fs.BoolVar(&o.snapshot, "snapshot", false, "primary-key tables: the current rows, not the changelog")
			fs.StringVar(&from, "from", "", "logs: where each bucket starts: earliest (default; a lake-enabled table's lake first), earliest-in-log, latest, offset=N or timestamp=T; the export ends at the high watermarks of its start")
			fs.StringVar(&buckets, "buckets", "", "comma-separated buckets to export (default: all)")
			fs.StringVar(&columns, "columns", "", "comma-separated columns to export, in that order (default: all); the nodes send only these columns of arrow-format batches")
			fs.IntVar(&o.concurrency, "concurrency", defaultBulkConcurrency, "buckets read at once")
			fs.Var(&partitions, "partition", "of a partitioned table, the partitions to export: dt=2026-12-03, 'dt>=2026-12-01', conditions joined by / (repeatable: any of them; default: every partition)")
		},
		check: func(pos []string) error {
			var err error
			o.columns = parseColumns(columns)
			o.partitions = partitions
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

// export writes the table's lines to the output, then the summary.
func export(ctx context.Context, env *cliEnv, cf *clientFlags, tbl *client.Table, o exportOptions) error {
	buckets, err := tableBuckets(tbl, o.buckets)
	if err != nil {
		return err
	}
	if o.snapshot && len(tbl.Info().PrimaryKey) == 0 {
		return fmt.Errorf("%w: --snapshot needs a primary-key table; %s is a log table (export its records without --snapshot)", errUsage, qualifiedName(tbl))
	}
	eo := dataio.ExportOptions{Snapshot: o.snapshot, From: o.from, Buckets: buckets, Columns: o.columns,
		Concurrency: o.concurrency, Timeout: cf.timeout}
	var e *dataio.Export
	if tbl.Partitioned() {
		handles, err := partitionHandles(ctx, tbl, o.partitions, cf.timeout)
		if err != nil {
			return err
		}
		e, err = dataio.NewPartitionsExport(ctx, handles, eo)
		if err != nil {
			return err
		}
	} else if len(o.partitions) > 0 {
		return fmt.Errorf("%w: --partition: %s is not partitioned", errUsage, qualifiedName(tbl))
	} else if e, err = dataio.NewExport(ctx, tbl, eo); err != nil {
		return err
	}
	out, err := openExportOutput(env, o.file)
	if err != nil {
		return err
	}
	name, noun := qualifiedName(tbl), e.Noun
	p := startProgress(env.stderr, func(elapsed time.Duration) string {
		return exportProgress(name, noun, e.Progress(), elapsed)
	})
	start := time.Now()
	err = e.Run(ctx, out.w)
	p.stop()
	if err != nil {
		out.abort()
		lines := e.Progress().Lines
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return fmt.Errorf("interrupted after %s%s", plural(lines, noun), out.notWritten())
		}
		return fmt.Errorf("export stopped after %s%s: %w", plural(lines, noun), out.notWritten(), err)
	}
	if err := out.commit(); err != nil {
		return err
	}
	printExportSummary(env, cf, name, noun, e.Progress(), time.Since(start))
	return nil
}

// qualifiedName is the table's DB.TABLE name.
func qualifiedName(tbl *client.Table) string {
	info := tbl.Info()
	return info.Database + "." + info.Name
}

// exportProgress is the export's progress line.
func exportProgress(table, noun string, pr dataio.ExportProgress, elapsed time.Duration) string {
	line := fmt.Sprintf("export %s: ", table)
	if pr.Offsets > 0 {
		line += fmt.Sprintf("%.1f%%, ", 100*float64(pr.OffsetsDone)/float64(pr.Offsets))
	}
	return line + fmt.Sprintf("%s, %.1f MB, %d/%d buckets done, %.0f %ss/s, %v", plural(pr.Lines, noun),
		megabytes(pr.Bytes), pr.BucketsDone, pr.Buckets, rate(pr.Lines, elapsed), noun, elapsed.Round(time.Second))
}

func printExportSummary(env *cliEnv, cf *clientFlags, table, noun string, pr dataio.ExportProgress, elapsed time.Duration) {
	lines, bytes, buckets := pr.Lines, pr.Bytes, pr.Buckets
	if cf.output == "json" {
		b, _ := json.Marshal(map[string]any{"table": table, "what": noun + "s", "rows": lines, "bytes": bytes, "buckets": buckets,
			"seconds": elapsed.Seconds(), "rows_per_s": rate(lines, elapsed), "mb_per_s": rate(bytes, elapsed) / 1e6})
		fmt.Fprintln(env.stderr, string(b))
		return
	}
	fmt.Fprintf(env.stderr, "exported %s of %s from %s, %d bytes in %v (%.0f %ss/s, %.1f MB/s)\n", plural(lines, noun), table,
		plural(int64(buckets), "bucket"), bytes, elapsed.Round(time.Millisecond), rate(lines, elapsed), noun, rate(bytes, elapsed)/1e6)
}
