package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/dataio"
)

// produceCmd appends JSON lines, one object per row, to a log table, or
// upserts (or deletes) them in a primary-key table; lines floe consume
// prints are taken as they are, their _change applied.
func produceCmd(env *cliEnv) clientCmd {
	var file, acks, columns string
	var del bool
	return clientCmd{summary: "append JSON lines to a log table, or upsert or delete them in a primary-key table (applying the _change of lines floe consume prints)", nargs: 1, streaming: true, arg: argTable,
		usage: "produce DB.TABLE [--file F] [--acks all|1|0] [--delete] [--columns a,b]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&file, "file", "", "read JSON lines from this file instead of stdin")
			choiceVar(fs, &acks, "acks", "all", ackChoices, "acknowledgement: all (every in-sync replica), 1 (the leader) or 0 (none)")
			fs.BoolVar(&del, "delete", false, "primary-key tables: each line is a key object whose row to delete")
			fs.StringVar(&columns, "columns", "", "primary-key tables: comma-separated columns each line updates (a partial update)")
		},
		check: func(pos []string) error {
			if del && columns != "" {
				return fmt.Errorf("%w: --delete and --columns exclude each other", errUsage)
			}
			if file != "" && file != "-" {
				if st, err := os.Stat(file); err != nil || st.IsDir() {
					return fmt.Errorf("%w: --file %s: not a readable file", errUsage, file)
				}
			}
			return nil
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			a, err := client.ParseAcks(acks)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			in := dataio.Interruptible(ctx, env.stdin)
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			if del && columns != "" {
				return fmt.Errorf("%w: --delete and --columns exclude each other", errUsage)
			}
			tbl, err := openTable(ctx, c, cf, pos[0])
			if err != nil {
				return err
			}
			// A row that cannot be delivered within --timeout fails, so
			// a run whose cluster went away ends instead of retrying for
			// the SDK's default 2 min.
			var w lineWriter
			switch {
			case len(tbl.Info().PrimaryKey) > 0:
				w, err = newUpsertLines(tbl, client.UpsertWriterOptions{Acks: a, PartialColumns: splitList(columns),
					DeliveryTimeout: cf.timeout}, del)
			case del || columns != "":
				return fmt.Errorf("%w: --delete and --columns need a primary-key table; %s is a log table", errUsage, pos[0])
			default:
				w, err = newAppendLines(tbl, client.AppendWriterOptions{Acks: a, DeliveryTimeout: cf.timeout})
			}
			if err != nil {
				return err
			}
			return produce(ctx, env, cf, w, in)
		}}
}

// lineWriter writes JSON lines to a table.
type lineWriter struct {
	write func(ctx context.Context, object []byte) error
	close func(ctx context.Context) error
	stats func() client.WriterStats
	verb  string // "produced", "upserted", "deleted"
	// changes counts the lines of a primary-key table whose _change made
	// them deletes or passed them over; nil for a log table.
	changes *lineChanges
}

// lineChanges counts what the _change of produced lines did besides the
// writer's usual verb.
type lineChanges struct {
	deleted, passed int64
}

// Lines floe consume prints carry _bucket, _offset and _timestamp, which
// produce drops, and on a primary-key table _change, which produce applies
// as floe table import does (import_meta.go): +A, +I and +U write the row,
// -D deletes its key, -U (an update's old row, its +U follows) is passed
// over. So a changelog piped from consume into produce does in the copy
// what it did in the source: a delete read as a write would bring its row
// back.

func newAppendLines(tbl *client.Table, opts client.AppendWriterOptions) (lineWriter, error) {
	w, err := tbl.NewAppendWriter(opts)
	if err != nil {
		return lineWriter{}, err
	}
	var meta dataio.MetaSplitter
	return lineWriter{verb: "produced", close: w.Close, stats: w.Stats, write: func(ctx context.Context, object []byte) error {
		cols, change, err := meta.Split(object)
		if err != nil {
			return err
		}
		if change != dataio.ChangeWrite {
			return fmt.Errorf("%w: a log table takes rows to append; -U and -D are a primary-key table's changes", dataio.ErrBadChange)
		}
		_, err = w.AppendJSON(ctx, cols)
		return err
	}}, nil
}

func newUpsertLines(tbl *client.Table, opts client.UpsertWriterOptions, del bool) (lineWriter, error) {
	w, err := tbl.NewUpsertWriter(opts)
	if err != nil {
		return lineWriter{}, err
	}
	var meta dataio.MetaSplitter
	changes := &lineChanges{}
	lw := lineWriter{verb: "upserted", close: w.Close, stats: w.Stats, changes: changes}
	if del {
		lw.verb = "deleted"
	}
	lw.write = func(ctx context.Context, object []byte) error {
		cols, change, err := meta.Split(object)
		if err != nil {
			return err
		}
		if del && meta.Stated && change != dataio.ChangeDelete {
			return fmt.Errorf("%w: --delete takes keys to delete, and this line's _change is not -D", dataio.ErrBadChange)
		}
		switch {
		case change == dataio.ChangeSkip:
			changes.passed++
			return nil
		case change == dataio.ChangeDelete && !del:
			changes.deleted++
			_, err = w.DeleteJSON(ctx, cols)
		case del:
			_, err = w.DeleteJSON(ctx, cols)
		default:
			_, err = w.UpsertJSON(ctx, cols)
		}
		return err
	}
	return lw, nil
}

// produce writes the JSON lines of in, then waits for them. Rows before a
// bad line are written; the bad line stops the run with its line number.
// So does the first row that fails: the rows after it would only wait
// for --timeout each and fail the same way.
func produce(ctx context.Context, env *cliEnv, cf *clientFlags, w lineWriter, in io.Reader) error {
	start := time.Now()
	st, readErr := dataio.EachLine(ctx, in, func(ctx context.Context, object []byte) error {
		if w.stats().Failed > 0 {
			return errRowsFailing
		}
		return w.write(ctx, object)
	})
	return closeWriter(ctx, cf, w.close, readErr, func(acked bool) {
		printProduceSummary(env, cf, w, st, time.Since(start), acked)
	})
}

// errRowsFailing stops reading input once rows fail to be written; the
// writer's error says why.
var errRowsFailing = errors.New("rows are failing to be written: stopped reading")

// closeWriter closes a writer whose input stopped with readErr (nil: it
// ended), sending what was accepted even after an interrupt, within
// --timeout, then has report print the summary, told whether every row
// was acknowledged. An interrupt is no error: what was read is written.
func closeWriter(ctx context.Context, cf *clientFlags, closeFn func(context.Context) error, readErr error,
	report func(acked bool)) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cf.timeout)
	defer cancel()
	closeErr := closeFn(cctx)
	report(closeErr == nil)
	if errors.Is(readErr, context.Canceled) && ctx.Err() != nil {
		readErr = nil // interrupted: what was read is written, and that is all
	}
	if errors.Is(readErr, errRowsFailing) && closeErr != nil {
		readErr = nil // the writer's error says why
	}
	if readErr != nil {
		return readErr
	}
	if closeErr != nil {
		return fmt.Errorf("rows not all written: %w", closeErr)
	}
	return nil
}

func printProduceSummary(env *cliEnv, cf *clientFlags, w lineWriter, st dataio.LineStats, elapsed time.Duration, acked bool) {
	ws := w.stats()
	rate := float64(st.Rows) / max(elapsed.Seconds(), 1e-9)
	var ch lineChanges
	if w.changes != nil {
		ch = *w.changes
	}
	if cf.output == "json" {
		res := map[string]any{"rows": st.Rows, "bytes": st.Bytes, "seconds": elapsed.Seconds(),
			"rows_per_s": rate, "all_acknowledged": acked}
		addOutcomes(res, st.Rows, ws)
		if w.changes != nil {
			res["deleted"], res["passed_over"] = ch.deleted, ch.passed
		}
		b, _ := json.Marshal(res)
		fmt.Fprintln(env.stderr, string(b))
		return
	}
	if !acked {
		fmt.Fprintf(env.stderr, "%s read: %s (%d bytes in %v)\n", plural(st.Rows, "row"), outcomes(st.Rows, ws),
			st.Bytes, elapsed.Round(time.Millisecond))
		return
	}
	// Lines whose _change made them deletes or passed them over are not
	// the verb's.
	done := w.verb + " " + plural(st.Rows-ch.deleted-ch.passed, "row")
	if ch.deleted > 0 {
		done += ", deleted " + plural(ch.deleted, "row")
	}
	if ch.passed > 0 {
		done += ", passed over " + plural(ch.passed, "-U row")
	}
	fmt.Fprintf(env.stderr, "%s, %d bytes in %v (%.0f rows/s)\n", done, st.Bytes,
		elapsed.Round(time.Millisecond), rate)
}

// outcomes says what became of rows handed to a writer that did not get
// them all acknowledged: acknowledged, unknown outcome (sent and not
// answered: they may be written, and a retry may write them twice), or
// not written (never sent, or refused).
func outcomes(rows int64, ws client.WriterStats) string {
	return fmt.Sprintf("%s acknowledged, %s with unknown outcome (sent, not answered: they may or may not be written), %s not written",
		plural(ws.Acknowledged, "row"), plural(ws.Unknown, "row"), plural(notWritten(rows, ws), "row"))
}

// addOutcomes adds outcomes' counts to a JSON summary; "failed" is
// unknown_outcome plus the rows refused.
func addOutcomes(res map[string]any, rows int64, ws client.WriterStats) {
	res["acknowledged"], res["failed"] = ws.Acknowledged, ws.Failed
	res["unknown_outcome"], res["not_written"] = ws.Unknown, notWritten(rows, ws)
}

// notWritten is how many of rows are known not to be written.
func notWritten(rows int64, ws client.WriterStats) int64 {
	return max(rows-ws.Acknowledged-ws.Unknown, 0)
}

// plural is "1 row" or "n rows".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
