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
)

func runProduce(ctx context.Context, env *cliEnv, args []string) error {
	return produceCmd(env).exec(ctx, env, args)
}

// produceCmd appends JSON lines, one object per row, to a log table.
func produceCmd(env *cliEnv) clientCmd {
	var file, acks string
	return clientCmd{name: "produce", nargs: 1, streaming: true,
		usage: "produce DB.TABLE [--file F] [--acks all|1|0]",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&file, "file", "", "read JSON lines from this file instead of stdin")
			fs.StringVar(&acks, "acks", "all", "acknowledgement: all (every in-sync replica), 1 (the leader) or 0 (none)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, pos []string) error {
			db, name, err := tableName(pos[0])
			if err != nil {
				return err
			}
			a, err := client.ParseAcks(acks)
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			in := interruptible(ctx, env.stdin)
			if file != "" && file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			tctx, cancel := context.WithTimeout(ctx, cf.timeout)
			tbl, err := c.Table(tctx, db, name)
			cancel()
			if err != nil {
				return err
			}
			return produce(ctx, env, cf, tbl, in, client.AppendWriterOptions{Acks: a})
		}}
}

// produce appends the JSON lines of in, then waits for them. Rows before a
// bad line are written; the bad line stops the run with its line number.
func produce(ctx context.Context, env *cliEnv, cf *clientFlags, tbl *client.Table, in io.Reader, opts client.AppendWriterOptions) error {
	w, err := tbl.NewAppendWriter(opts)
	if err != nil {
		return err
	}
	start := time.Now()
	st, readErr := produceLines(ctx, in, func(ctx context.Context, object []byte) error {
		_, err := w.AppendJSON(ctx, object)
		return err
	})
	// What was accepted is sent even after an interrupt, within --timeout.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cf.timeout)
	defer cancel()
	closeErr := w.Close(cctx)
	elapsed := time.Since(start)
	printProduceSummary(env, cf, st, elapsed, closeErr == nil)
	if errors.Is(readErr, context.Canceled) && ctx.Err() != nil {
		readErr = nil // interrupted: what was read is written, and that is all
	}
	if readErr != nil {
		return readErr
	}
	if closeErr != nil {
		return fmt.Errorf("rows not all written: %w", closeErr)
	}
	return nil
}

func printProduceSummary(env *cliEnv, cf *clientFlags, st lineStats, elapsed time.Duration, acked bool) {
	rate := float64(st.rows) / max(elapsed.Seconds(), 1e-9)
	if cf.output == "json" {
		b, _ := json.Marshal(map[string]any{"rows": st.rows, "bytes": st.bytes, "seconds": elapsed.Seconds(),
			"rows_per_s": rate, "acknowledged": acked})
		fmt.Fprintln(env.stderr, string(b))
		return
	}
	verb := "produced"
	if !acked {
		verb = "appended (not all acknowledged)"
	}
	fmt.Fprintf(env.stderr, "%s %d rows, %d bytes in %v (%.0f rows/s)\n", verb, st.rows, st.bytes,
		elapsed.Round(time.Millisecond), rate)
}
