package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
)

// maxBadLinesShown bounds the skipped lines an import names on stderr.
const maxBadLinesShown = 10

// importOptions are the flags of floe table import.
type importOptions struct {
	file        string // "-": stdin
	concurrency int    // parsing goroutines
	skipBad     bool
}

// tableImportCmd loads JSON lines into a table: appends to a log table,
// upserts (and deletes) into a primary-key table.
func tableImportCmd(env *cliEnv) clientCmd {
	var o importOptions
	return clientCmd{summary: "load JSON lines from a file into a table, fast (appends, or upserts and deletes)", nargs: 1, streaming: true, arg: argTable,
		usage: "table import DB.TABLE --file F [--concurrency N] [--skip-bad]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&o.file, "file", "", "the JSON lines to load (- for stdin); lines floe consume and floe table export write are taken, their _change applied")
			fs.IntVar(&o.concurrency, "concurrency", defaultBulkConcurrency, "lines parsed at once, in this many goroutines")
			fs.BoolVar(&o.skipBad, "skip-bad", false, "skip lines that do not parse or fit the schema (counted and reported) instead of stopping at the first")
		},
		check: func(pos []string) error {
			switch {
			case o.file == "":
				return fmt.Errorf("%w: --file is required (- reads stdin)", errUsage)
			case o.concurrency < 1 || o.concurrency > maxBulkConcurrency:
				return fmt.Errorf("%w: --concurrency must be from 1 to %d", errUsage, maxBulkConcurrency)
			case o.file != "-":
				if st, err := os.Stat(o.file); err != nil || st.IsDir() {
					return fmt.Errorf("%w: --file %s: not a readable file", errUsage, o.file)
				}
			}
			return nil
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			in, size := dataio.Interruptible(ctx, env.stdin), int64(0)
			if o.file != "-" {
				f, err := os.Open(o.file)
				if err != nil {
					return err
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil {
					size = st.Size()
				}
				in = f
			}
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			return importLines(ctx, env, cf, tbl, &countingReader{r: in}, size, o)
		}}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// importLines loads the lines of in, size bytes (0: unknown), into tbl,
// showing its progress and, with --skip-bad, the first lines skipped.
func importLines(ctx context.Context, env *cliEnv, cf *clientFlags, tbl *client.Table, in *countingReader, size int64, o importOptions) error {
	var p *progressLine
	var im *dataio.Import
	im, err := dataio.NewImport(tbl, dataio.ImportOptions{Concurrency: o.concurrency, SkipBad: o.skipBad, OnBad: func(line int, err error) {
		if n := im.Counts.Skipped.Load(); n <= maxBadLinesShown {
			p.printf("line %d skipped: %s\n", line, cliMessage(err))
		}
	}})
	if err != nil {
		return err
	}
	name := qualifiedName(tbl)
	start := time.Now()
	p = startProgress(env.stderr, func(elapsed time.Duration) string {
		return importProgress(name, in.n.Load(), size, &im.Counts, elapsed)
	})
	feedErr := im.Run(ctx, in)
	return closeWriter(ctx, cf, im.Close, feedErr, func(acked bool) {
		p.stop()
		printImportSummary(env, cf, name, &im.Counts, im.Stats(), time.Since(start), acked)
	})
}

// importProgress is the import's progress line.
func importProgress(table string, read, size int64, counts *dataio.ImportCounts, elapsed time.Duration) string {
	rows := counts.Writes.Load() + counts.Deletes.Load()
	line := fmt.Sprintf("import %s: ", table)
	if size > 0 {
		line += fmt.Sprintf("%.1f%% of %.1f MB, ", 100*float64(read)/float64(size), megabytes(size))
	} else {
		line += fmt.Sprintf("%.1f MB read, ", megabytes(read))
	}
	line += fmt.Sprintf("%s, %.0f rows/s", plural(rows, "row"), rate(rows, elapsed))
	if n := counts.Skipped.Load(); n > 0 {
		line += fmt.Sprintf(", %d skipped", n)
	}
	return line + fmt.Sprintf(", %v", elapsed.Round(time.Second))
}

func printImportSummary(env *cliEnv, cf *clientFlags, table string, counts *dataio.ImportCounts, ws client.WriterStats,
	elapsed time.Duration, acked bool) {
	writes, deletes, skipped, bytes := counts.Writes.Load(), counts.Deletes.Load(), counts.Skipped.Load(), counts.Bytes.Load()
	rows := writes + deletes
	if cf.output == "json" {
		res := map[string]any{"table": table, "rows": rows, "writes": writes, "deletes": deletes, "skipped": skipped,
			"bytes": bytes, "seconds": elapsed.Seconds(), "rows_per_s": rate(rows, elapsed), "mb_per_s": rate(bytes, elapsed) / 1e6,
			"all_acknowledged": acked}
		addOutcomes(res, rows, ws)
		b, _ := json.Marshal(res)
		fmt.Fprintln(env.stderr, string(b))
		return
	}
	var skippedNote string
	if skipped > 0 {
		skippedNote = fmt.Sprintf(", %s skipped", plural(skipped, "bad line"))
	}
	if !acked {
		fmt.Fprintf(env.stderr, "%s read into %s: %s%s (%d bytes in %v)\n", plural(rows, "row"), table,
			outcomes(rows, ws), skippedNote, bytes, elapsed.Round(time.Millisecond))
		return
	}
	var deletesNote string
	if deletes > 0 {
		deletesNote = fmt.Sprintf(" (%s)", plural(deletes, "delete"))
	}
	fmt.Fprintf(env.stderr, "imported %s into %s%s%s, %d bytes in %v (%.0f rows/s, %.1f MB/s)\n", plural(rows, "row"), table,
		deletesNote, skippedNote, bytes, elapsed.Round(time.Millisecond), rate(rows, elapsed), rate(bytes, elapsed)/1e6)
}
