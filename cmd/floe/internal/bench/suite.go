package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/client"
)

// SuiteRow is one line of `floe bench suite --output json`: the fields of
// the peer kit's results.jsonl (../shared/bench/peers), so Floe's rows and
// its peers' can be read side by side.
type SuiteRow struct {
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
	CPUResult
}

// suiteTest is one benchmark of the suite.
type suiteTest struct {
	name string
	kv   bool                                                     // on the primary-key table (needs it loaded for lookups)
	run  func(ctx context.Context, s *suite) (Result, int, error) // the result and the rows per call
	note string
}

// suite is one run of `floe bench suite`.
type suite struct {
	timeout time.Duration
	base    KVOptions
	logTbl  *client.Table
	kvTbl   *client.Table
	loaded  bool
	rfLabel string
}

// suiteTests are the tests in the order they run: the shapes the issues
// set targets for, against the peers' closed-loop rows.
var suiteTests = []suiteTest{
	{name: "append-1", note: "one caller, one record at a time", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.logFlags(1)
		r, err := Produce(ctx, s.logTbl, &f, ProduceMode{Batch: 1})
		return r, 1, err
	}},
	{name: "append-64", note: "64 writers, one record at a time each", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.logFlags(64)
		r, err := Produce(ctx, s.logTbl, &f, ProduceMode{Batch: 1})
		return r, 1, err
	}},
	{name: "append-64-shared", note: "64 callers sharing one writer, one record at a time each", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.logFlags(64)
		r, err := Produce(ctx, s.logTbl, &f, ProduceMode{Batch: 1, SharedWriter: true})
		return r, 1, err
	}},
	{name: "append-batching", note: "one writer appending without waiting", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.logFlags(1)
		r, err := Produce(ctx, s.logTbl, &f, ProduceMode{Batch: 1, Batching: true})
		return r, 0, err
	}},
	{name: "e2e-10000", note: "10,000 records/s, latency from Append to seen by a following scanner", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.logFlags(1)
		r, err := E2E(ctx, s.logTbl, &f, 10000, s.timeout)
		return r, 1, err
	}},
	{name: "upsert-1", kv: true, note: "one caller, one row at a time", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(1, 1, false)
		r, err := Upsert(ctx, s.kvTbl, &f, &SustainOptions{}, nil)
		return r, 1, err
	}},
	{name: "upsert-128", kv: true, note: "128 writers, one row at a time each", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(128, 1, false)
		r, err := Upsert(ctx, s.kvTbl, &f, &SustainOptions{}, nil)
		return r, 1, err
	}},
	{name: "upsert-128-shared", kv: true, note: "128 callers sharing one writer", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(128, 1, true)
		r, err := Upsert(ctx, s.kvTbl, &f, &SustainOptions{}, nil)
		return r, 1, err
	}},
	{name: "upsert-8x500", kv: true, note: "8 writers, batches of 500 rows", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(8, 500, false)
		r, err := Upsert(ctx, s.kvTbl, &f, &SustainOptions{}, nil)
		return r, 500, err
	}},
	{name: "lookup-128", kv: true, note: "128 callers, single-key lookups of loaded keys", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(128, 1, false)
		r, err := Lookup(ctx, s.kvTbl, &f, false)
		return r, 1, err
	}},
	{name: "lookup-32x500", kv: true, note: "32 callers, batches of 500 keys", run: func(ctx context.Context, s *suite) (Result, int, error) {
		f := s.kvFlags(32, 500, false)
		r, err := Lookup(ctx, s.kvTbl, &f, false)
		return r, 500, err
	}},
}

// SuiteTestNames are the suite's tests, in the order they run.
func SuiteTestNames() []string {
	names := make([]string, len(suiteTests))
	for i, t := range suiteTests {
		names[i] = t.name
	}
	return names
}

// SuiteConfig is one run of the suite.
type SuiteConfig struct {
	// Base are the options every test starts from; each sets its own
	// concurrency and batch.
	Base KVOptions
	// Tests are the names of the tests to run (SuiteTestNames), in order.
	Tests []string
	// Load: upsert every key of [0, Base.Keys) before the first lookup
	// test.
	Load bool
	// Timeout bounds each call that creates or opens a table or reads an
	// offset.
	Timeout time.Duration
	// Progress gets a line as each test (and the load) starts.
	Progress io.Writer
	// OnRow, when set, gets each test's row as it ends.
	OnRow func(SuiteRow)
}

// RunSuite runs the tests of cfg in turn against the tables
// bench.suite_log and bench.suite_kv (created if missing) and returns
// their rows.
func RunSuite(ctx context.Context, c *client.Client, cfg SuiteConfig) ([]SuiteRow, error) {
	var picked []suiteTest
	for _, name := range cfg.Tests {
		i := slices.IndexFunc(suiteTests, func(t suiteTest) bool { return t.name == name })
		if i < 0 {
			return nil, fmt.Errorf("no suite test %q", name)
		}
		picked = append(picked, suiteTests[i])
	}
	f := cfg.Base
	s := &suite{timeout: cfg.Timeout, base: f}
	var err error
	logFlags := f.Options
	logFlags.Table = "bench.suite_log"
	if s.logTbl, err = OpenLogTable(ctx, c, &logFlags, cfg.Timeout); err != nil {
		return nil, err
	}
	kvFlags := f
	kvFlags.Table = "bench.suite_kv"
	if s.kvTbl, err = OpenKVTable(ctx, c, &kvFlags, cfg.Timeout); err != nil {
		return nil, err
	}
	s.rfLabel = fmt.Sprintf("acks=%s, RF %d, fsync", f.Acks, s.kvTbl.Info().Replication)
	var rows []SuiteRow
	for i, t := range picked {
		if t.kv && strings.HasPrefix(t.name, "lookup") && cfg.Load && !s.loaded {
			start := time.Now()
			fmt.Fprintf(cfg.Progress, "loading %s into %s\n", plural(f.Keys, "key"), kvFlags.Table)
			lf := s.kvFlags(8, 1, false)
			if err := LoadKeys(ctx, s.kvTbl, &lf); err != nil {
				return nil, fmt.Errorf("load: %w", err)
			}
			s.loaded = true
			fmt.Fprintf(cfg.Progress, "loaded in %v\n", time.Since(start).Round(time.Millisecond))
		}
		fmt.Fprintf(cfg.Progress, "[%d/%d] %s (%s), %v\n", i+1, len(picked), t.name, t.note, f.Duration)
		res, batch, err := t.run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
		row := s.row(t, res, batch)
		rows = append(rows, row)
		if cfg.OnRow != nil {
			cfg.OnRow(row)
		}
	}
	return rows, nil
}

// logFlags are the base flags with concurrency callers on the log table.
func (s *suite) logFlags(concurrency int) Options {
	f := s.base.Options
	f.Concurrency = concurrency
	return f
}

// kvFlags are the base flags for the primary-key table.
func (s *suite) kvFlags(concurrency, batch int, shared bool) KVOptions {
	f := s.base
	f.Concurrency, f.Batch, f.SharedWriter = concurrency, batch, shared
	return f
}

// row turns a benchmark's result into the suite's line.
func (s *suite) row(t suiteTest, res Result, batch int) SuiteRow {
	us := func(ms float64) float64 { return ms * 1000 }
	r := SuiteRow{Kind: "floe", System: "floe", Test: t.name, Concurrency: res.Concurrency, ValueSize: res.RecordBytes,
		Ops: res.Records, Errors: res.Errors, Seconds: res.DurationS, OpsPerSec: res.OpsPerS, MBPerSec: res.MBPerS,
		P50us: us(res.P50Ms), P99us: us(res.P99Ms), P999us: us(res.P999Ms), MaxUs: us(res.MaxMs),
		Durability: s.rfLabel, Note: t.note, CPUResult: res.CPUResult}
	if batch > 1 {
		r.Pipeline = batch
	}
	if t.kv {
		r.KeySize = 16
	}
	return r
}

// PrintSuite prints the suite's rows as a table.
func PrintSuite(out io.Writer, rows []SuiteRow) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
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
		fmt.Fprintf(out, "(%s; ops are records or keys; CPU is per op, the nodes' with --node-pids; --output json gives the peer kit's fields)\n", rows[0].Durability)
	}
	return nil
}
