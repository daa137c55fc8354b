package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/bench"
)

func benchProduceCmd(env *cliEnv) clientCmd {
	var f benchFlags
	var batch int
	var batching, sharedWriter bool
	return clientCmd{summary: "write throughput and latency of a log table", streaming: true,
		usage: "bench produce [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--record-bytes 1024] [--acks all] [--batch 1] [--batching] [--shared-writer] [--log-format arrow|row] [--partitions N [--unpartitioned]]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.IntVar(&batch, "batch", 1, "records each goroutine appends before waiting for their acks (1: one record at a time)")
			fs.BoolVar(&batching, "batching", false, "append without waiting; latency is Append to ack per record (--batch is ignored)")
			fs.StringVar(&f.LogFormat, "log-format", "", "log.format of a table the benchmark creates: arrow or row (default: the cluster's, arrow)")
			fs.IntVar(&f.Partitions, "partitions", 0, "spread the rows evenly over this many hourly partitions of a table partitioned by a column part, "+
				"created with '"+bench.PartitionedLogSchema+"' (use a --table of its own; 0: an unpartitioned table)")
			fs.BoolVar(&f.Unpartitioned, "unpartitioned", false, "with --partitions: the same rows, part column included, into a table that is not partitioned (the baseline of what partitions cost)")
			fs.BoolVar(&sharedWriter, "shared-writer", false,
				"the goroutines share one writer, as a service's request handlers would: it batches their records, sending a bucket's batch when it fills or --linger after its first record")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			if batch <= 0 {
				return fmt.Errorf("%w: --batch must be positive", errUsage)
			}
			tbl, err := openBenchTable(f.Table, func() (*client.Table, error) { return bench.OpenLogTable(ctx, c, &f.Options, cf.timeout) })
			if err != nil {
				return err
			}
			res, err := bench.Produce(ctx, tbl, &f.Options, bench.ProduceMode{Batch: batch, Batching: batching, SharedWriter: sharedWriter})
			if err != nil {
				return err
			}
			mode := fmt.Sprintf("batch %d", batch)
			if batching {
				mode = "batching"
			}
			writers := fmt.Sprintf("%d writers", f.Concurrency)
			if sharedWriter {
				writers = fmt.Sprintf("%d callers sharing one writer", f.Concurrency)
			}
			title := fmt.Sprintf("floe bench produce: %s, %s, %d-byte records, acks=%s, %s",
				f.Table, writers, f.RecordBytes, f.Acks, mode)
			return printBenchResult(env, cf, title, res)
		}}
}

func benchE2ECmd(env *cliEnv) clientCmd {
	var f benchFlags
	var rate float64
	return clientCmd{summary: "latency from produce to consume", streaming: true,
		usage: "bench e2e [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--record-bytes 1024] [--acks all] [--rate 10000]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.Float64Var(&rate, "rate", 10000, "records per second to write, over all writer goroutines")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			if f.RecordBytes < 8 {
				return fmt.Errorf("%w: --record-bytes must be at least 8 (the send time)", errUsage)
			}
			if rate <= 0 || rate > 1e8 {
				return fmt.Errorf("%w: --rate must be in (0, 1e8]", errUsage)
			}
			tbl, err := openBenchTable(f.Table, func() (*client.Table, error) { return bench.OpenLogTable(ctx, c, &f.Options, cf.timeout) })
			if err != nil {
				return err
			}
			res, err := bench.E2E(ctx, tbl, &f.Options, rate, cf.timeout)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench e2e: %s, %d writers at %.0f records/s, %d-byte records, acks=%s (latency: Append to seen by a scanner)",
				f.Table, f.Concurrency, rate, f.RecordBytes, f.Acks)
			return printBenchResult(env, cf, title, res)
		}}
}

func benchUpsertCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var sf sustainFlags
	return clientCmd{summary: "upsert throughput and latency of a primary-key table", streaming: true,
		usage: "bench upsert [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--keys 1000000] [--record-bytes 1024] [--acks all] [--batch 1] [--shared-writer] [--load] [--interval 10s] [--window 20s] [--kv-dir DIR,...]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			f.registerLoad(fs)
			sf.register(fs)
			fs.IntVar(&f.batch, "batch", 1, "rows each goroutine upserts before waiting for their acks (1: one row at a time)")
			fs.BoolVar(&f.sharedWriter, "shared-writer", false,
				"the goroutines share one writer, as a service's request handlers would: it batches their rows, sending a bucket's batch when it fills or --linger after its first row")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if err := sf.validate(f.keys); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			tbl, o, err := f.openLoaded(ctx, c, cf, env)
			if err != nil {
				return err
			}
			res, err := bench.Upsert(ctx, tbl, o, &sf.SustainOptions, bench.IntervalReporter(env.stderr, sf.KVDirs))
			if err != nil {
				return err
			}
			writers := fmt.Sprintf("%d writers", f.Concurrency)
			if f.sharedWriter {
				writers = fmt.Sprintf("%d callers sharing one writer", f.Concurrency)
			}
			title := fmt.Sprintf("floe bench upsert: %s, %s, %d random keys, %d-byte values, acks=%s, batch %d",
				f.Table, writers, f.keys, f.RecordBytes, f.Acks, f.batch)
			return printBenchResult(env, cf, title, res)
		}}
}

func benchLookupCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var linearizable bool
	return clientCmd{summary: "lookup throughput and latency of a primary-key table", streaming: true,
		usage: "bench lookup [--table DB.TABLE] [--duration 10s] [--concurrency 1] [--keys 1000000] [--batch 1] [--load] [--linearizable]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.IntVar(&f.batch, "batch", 1, "keys per LookupBatch call (1: single-key Lookup calls, which one lookuper coalesces)")
			f.registerLoad(fs)
			fs.BoolVar(&linearizable, "linearizable", false, "linearizable lookups")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			tbl, o, err := f.openLoaded(ctx, c, cf, env)
			if err != nil {
				return err
			}
			res, err := bench.Lookup(ctx, tbl, o, linearizable)
			if err != nil {
				return err
			}
			title := fmt.Sprintf("floe bench lookup: %s, %d callers, %d random keys, batch %d, linearizable=%v (records: keys looked up)",
				f.Table, f.Concurrency, f.keys, f.batch, linearizable)
			return printBenchResult(env, cf, title, res)
		}}
}

func benchSuiteCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var tests string
	var load bool
	names := bench.SuiteTestNames()
	return clientCmd{summary: "run the produce, e2e, upsert and lookup benchmarks in turn and print one table", streaming: true,
		usage: "bench suite [--duration 10s] [--tests " + strings.Join(names[:2], ",") + ",...] [--keys 1000000] [--load] [--record-bytes 1024] [--output text|json]",
		flags: func(fs *flag.FlagSet) {
			f.register(fs)
			fs.StringVar(&tests, "tests", "", "comma-separated tests to run (default all: "+strings.Join(names, ", ")+")")
			fs.BoolVar(&load, "load", true, "upsert every key of [0, keys) before the lookup tests (without it they look up what is there)")
		},
		run: func(ctx context.Context, c *client.Client, cf *clientFlags, _ []string) error {
			f.batch = 1 // each test sets its own
			if err := f.validate(); err != nil {
				return err
			}
			stop, err := f.startProfile()
			if err != nil {
				return err
			}
			defer stop()
			asJSON := cf.output == "json" // one line per test in the peer kit's results.jsonl shape
			picked, err := pickSuiteTests(tests)
			if err != nil {
				return err
			}
			cfg := bench.SuiteConfig{Base: *f.options(), Tests: picked, Load: load, Timeout: cf.timeout, Progress: env.stderr}
			if asJSON {
				cfg.OnRow = func(row bench.SuiteRow) {
					line, _ := json.Marshal(row)
					fmt.Fprintln(env.stdout, string(line))
				}
			}
			rows, err := bench.RunSuite(ctx, c, cfg)
			if err != nil || asJSON {
				return err
			}
			return bench.PrintSuite(env.stdout, rows)
		}}
}

// pickSuiteTests resolves --tests (empty: all).
func pickSuiteTests(list string) ([]string, error) {
	if list == "" {
		return bench.SuiteTestNames(), nil
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		if !slices.Contains(bench.SuiteTestNames(), strings.TrimSpace(name)) {
			return nil, fmt.Errorf("%w: no suite test %q", errUsage, name)
		}
		out = append(out, strings.TrimSpace(name))
	}
	return out, nil
}
