package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// suiteRow is one line of `floe bench suite --output json`: the fields of
// the peer kit's results.jsonl (../shared/bench/peers), so Floe's rows and
// its peers' can be read side by side.
type suiteRow struct {
	Kind        string  `json:"kind"` // always "floe"
	System      string  `json:"system"`
	Test        string  `json:"test"`
	Concurrency int     `json:"concurrency"`
	Pipeline    int     `json:"pipeline,omitempty"`
	KeySize     int     `json:"key_size"`
	ValueSize   int     `json:"value_size"`
	Ops         int64   `json:"ops"`
	Errors      int64   `json:"errors"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	P50us       float64 `json:"p50_us"`
	P99us       float64 `json:"p99_us"`
	P999us      float64 `json:"p999_us"`
	MaxUs       float64 `json:"max_us"`
	Durability  string  `json:"durability,omitempty"`
	Note        string  `json:"note,omitempty"`
	cpuResult
}

// suiteTest is one benchmark of the suite.
type suiteTest struct {
	name string
	kv   bool                                                          // on the primary-key table (needs it loaded for lookups)
	run  func(ctx context.Context, s *suite) (benchResult, int, error) // the result and the rows per call
	note string
}

// suite is one run of `floe bench suite`.
type suite struct {
	cf      *clientFlags
	base    kvBenchFlags
	logTbl  *client.Table
	kvTbl   *client.Table
	loaded  bool
	rfLabel string
}

// suiteTests are the tests in the order they run: the shapes the issues
// set targets for, against the peers' closed-loop rows.
var suiteTests = []suiteTest{
	{name: "append-1", note: "one caller, one record at a time", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.logFlags(1)
		r, err := benchProduce(ctx, s.logTbl, &f, 1, false, false)
		return r, 1, err
	}},
	{name: "append-64", note: "64 writers, one record at a time each", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.logFlags(64)
		r, err := benchProduce(ctx, s.logTbl, &f, 1, false, false)
		return r, 1, err
	}},
	{name: "append-64-shared", note: "64 callers sharing one writer, one record at a time each", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.logFlags(64)
		r, err := benchProduce(ctx, s.logTbl, &f, 1, false, true)
		return r, 1, err
	}},
	{name: "append-batching", note: "one writer appending without waiting", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.logFlags(1)
		r, err := benchProduce(ctx, s.logTbl, &f, 1, true, false)
		return r, 0, err
	}},
	{name: "e2e-10000", note: "10,000 records/s, latency from Append to seen by a following scanner", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.logFlags(1)
		r, err := benchE2E(ctx, s.cf, s.logTbl, &f, 10000)
		return r, 1, err
	}},
	{name: "upsert-1", kv: true, note: "one caller, one row at a time", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(1, 1, false)
		r, err := benchUpsert(ctx, s.kvTbl, &f, &sustainFlags{}, nil)
		return r, 1, err
	}},
	{name: "upsert-128", kv: true, note: "128 writers, one row at a time each", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(128, 1, false)
		r, err := benchUpsert(ctx, s.kvTbl, &f, &sustainFlags{}, nil)
		return r, 1, err
	}},
	{name: "upsert-128-shared", kv: true, note: "128 callers sharing one writer", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(128, 1, true)
		r, err := benchUpsert(ctx, s.kvTbl, &f, &sustainFlags{}, nil)
		return r, 1, err
	}},
	{name: "upsert-8x500", kv: true, note: "8 writers, batches of 500 rows", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(8, 500, false)
		r, err := benchUpsert(ctx, s.kvTbl, &f, &sustainFlags{}, nil)
		return r, 500, err
	}},
	{name: "lookup-128", kv: true, note: "128 callers, single-key lookups of loaded keys", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(128, 1, false)
		r, err := benchLookup(ctx, s.kvTbl, &f, false)
		return r, 1, err
	}},
	{name: "lookup-32x500", kv: true, note: "32 callers, batches of 500 keys", run: func(ctx context.Context, s *suite) (benchResult, int, error) {
		f := s.kvFlags(32, 500, false)
		r, err := benchLookup(ctx, s.kvTbl, &f, false)
		return r, 500, err
	}},
}

// logFlags are the base flags with concurrency callers on the log table.
func (s *suite) logFlags(concurrency int) benchFlags {
	f := s.base.benchFlags
	f.concurrency = concurrency
	return f
}

// kvFlags are the base flags for the primary-key table.
func (s *suite) kvFlags(concurrency, batch int, shared bool) kvBenchFlags {
	f := s.base
	f.concurrency, f.batch, f.sharedWriter = concurrency, batch, shared
	return f
}

func benchSuiteCmd(env *cliEnv) clientCmd {
	var f kvBenchFlags
	var tests string
	var load bool
	names := make([]string, len(suiteTests))
	for i, t := range suiteTests {
		names[i] = t.name
	}
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
			s := &suite{cf: cf, base: f}
			logFlags := f.benchFlags
			logFlags.table = "bench.suite_log"
			if s.logTbl, err = openBenchTable(ctx, c, cf, &logFlags); err != nil {
				return err
			}
			kvFlags := f
			kvFlags.table = "bench.suite_kv"
			if s.kvTbl, err = openKVBenchTable(ctx, c, cf, &kvFlags); err != nil {
				return err
			}
			s.rfLabel = fmt.Sprintf("acks=%s, RF %d, fsync", f.ackMode, s.kvTbl.Info().Replication)
			var rows []suiteRow
			for i, t := range picked {
				if t.kv && strings.HasPrefix(t.name, "lookup") && load && !s.loaded {
					start := time.Now()
					fmt.Fprintf(env.stderr, "loading %s into %s\n", plural(f.keys, "key"), kvFlags.table)
					lf := s.kvFlags(8, 1, false)
					if err := loadKeys(ctx, s.kvTbl, &lf); err != nil {
						return fmt.Errorf("load: %w", err)
					}
					s.loaded = true
					fmt.Fprintf(env.stderr, "loaded in %v\n", time.Since(start).Round(time.Millisecond))
				}
				fmt.Fprintf(env.stderr, "[%d/%d] %s (%s), %v\n", i+1, len(picked), t.name, t.note, f.duration)
				res, batch, err := t.run(ctx, s)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				row := s.row(t, res, batch)
				rows = append(rows, row)
				if asJSON {
					line, _ := json.Marshal(row)
					fmt.Fprintln(env.stdout, string(line))
				}
			}
			if !asJSON {
				return printSuite(env, rows)
			}
			return nil
		}}
}

// pickSuiteTests resolves --tests (empty: all).
func pickSuiteTests(list string) ([]suiteTest, error) {
	if list == "" {
		return suiteTests, nil
	}
	var out []suiteTest
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(suiteTests, func(t suiteTest) bool { return t.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("%w: no suite test %q", errUsage, name)
		}
		out = append(out, suiteTests[i])
	}
	return out, nil
}

// row turns a benchmark's result into the suite's line.
func (s *suite) row(t suiteTest, res benchResult, batch int) suiteRow {
	us := func(ms float64) float64 { return ms * 1000 }
	r := suiteRow{Kind: "floe", System: "floe", Test: t.name, Concurrency: res.Concurrency, ValueSize: res.RecordBytes,
		Ops: res.Records, Errors: res.Errors, Seconds: res.DurationS, OpsPerSec: res.OpsPerS, MBPerSec: res.MBPerS,
		P50us: us(res.P50Ms), P99us: us(res.P99Ms), P999us: us(res.P999Ms), MaxUs: us(res.MaxMs),
		Durability: s.rfLabel, Note: t.note, cpuResult: res.cpuResult}
	if batch > 1 {
		r.Pipeline = batch
	}
	if t.kv {
		r.KeySize = 16
	}
	return r
}

// printSuite prints the suite's rows as a table.
func printSuite(env *cliEnv, rows []suiteRow) error {
	w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TEST\tCONC\tBATCH\tOPS/S\tMB/S\tP50 MS\tP99 MS\tP999 MS\tERRORS\tNODES µS/OP\tCLIENT µS/OP\t")
	for _, r := range rows {
		batch := "-"
		if r.Pipeline > 0 {
			batch = fmt.Sprint(r.Pipeline)
		}
		nodes := "-"
		if r.ServerCPUs > 0 {
			nodes = fmt.Sprintf("%.1f", r.ServerCPUusOp)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%.0f\t%.1f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%.1f\t\n", r.Test, r.Concurrency, batch, r.OpsPerSec, r.MBPerSec,
			r.P50us/1000, r.P99us/1000, r.P999us/1000, r.Errors, nodes, r.ClientCPUusOp)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(rows) > 0 {
		fmt.Fprintf(env.stdout, "(%s; ops are records or keys; CPU is per op, the nodes' with --node-pids; --output json gives the peer kit's fields)\n", rows[0].Durability)
	}
	return nil
}
