package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// The bench commands parse their flags into the options of
// cmd/floe/internal/bench, which runs the benchmarks.

// benchCmds are the benchmarks of floe bench.
func benchCmds(env *cliEnv) []clientCmd {
	return []clientCmd{benchProduceCmd(env), benchConsumeCmd(env), benchLakeCmd(env), benchE2ECmd(env), benchUpsertCmd(env), benchLookupCmd(env), benchSuiteCmd(env),
		benchPartitionsCmd(env)}
}

// benchFlags are the flags both benchmarks take.
type benchFlags struct {
	bench.Options
	acks       string
	cpuProfile string
	nodePIDs   string
}

func (f *benchFlags) register(fs *flag.FlagSet) {
	f.registerAs(fs, "bench.records", "DB.TABLE to write; created with '"+bench.LogSchema+"' if missing")
}

// registerAs registers the flags with the given default table.
func (f *benchFlags) registerAs(fs *flag.FlagSet, table, tableUsage string) {
	fs.StringVar(&f.Table, "table", table, tableUsage)
	fs.DurationVar(&f.Duration, "duration", 10*time.Second, "how long to write")
	fs.IntVar(&f.Concurrency, "concurrency", 1, "writer goroutines, each with its own writer")
	fs.IntVar(&f.RecordBytes, "record-bytes", 1024, "payload bytes per record")
	choiceVar(fs, &f.acks, "acks", "all", ackChoices, "acknowledgement: all, 1 or 0")
	fs.IntVar(&f.Buckets, "buckets", 0, "buckets of a table created by the benchmark (0: the cluster's default)")
	fs.DurationVar(&f.Linger, "linger", 0, "writer linger (0: the writer's default, negative: none)")
	fs.IntVar(&f.MaxInFlight, "max-in-flight", 0, fmt.Sprintf("batches of a bucket a writer has on their way at once, 1 to %d (0: the writer's default, %d)",
		client.MaxInFlightLimit, client.DefaultMaxInFlight))
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this client to the file (go tool pprof)")
	fs.StringVar(&f.nodePIDs, "node-pids", "", "comma-separated process ids of the nodes, when they run on this machine: report their CPU time per operation beside the client's (the peer kit's server_cpu_us_per_op)")
}

// startProfile starts the --cpuprofile profile, if asked; the returned
// function stops it.
func (f *benchFlags) startProfile() (func(), error) {
	if f.cpuProfile == "" {
		return func() {}, nil
	}
	out, err := os.Create(f.cpuProfile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}

func (f *benchFlags) validate() error {
	var err error
	if f.Acks, err = client.ParseAcks(f.acks); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if f.NodePIDs, err = parseNodePIDs(f.nodePIDs); err != nil {
		return err
	}
	switch {
	case f.Duration <= 0:
		return fmt.Errorf("%w: --duration must be positive", errUsage)
	case f.Concurrency <= 0 || f.Concurrency > 10000:
		return fmt.Errorf("%w: --concurrency must be in [1, 10000]", errUsage)
	case f.RecordBytes < 0 || f.RecordBytes > 64<<20:
		return fmt.Errorf("%w: --record-bytes must be in [0, 64 MiB]", errUsage)
	case f.Buckets < 0:
		return fmt.Errorf("%w: --buckets must not be negative", errUsage)
	case f.MaxInFlight < 0 || f.MaxInFlight > client.MaxInFlightLimit:
		return fmt.Errorf("%w: --max-in-flight must be in [1, %d] (0: the default)", errUsage, client.MaxInFlightLimit)
	}
	return nil
}

// parseNodePIDs reads --node-pids; a bad list is a usage mistake.
func parseNodePIDs(list string) ([]int, error) {
	pids, err := bench.ParseNodePIDs(list)
	if err != nil {
		return nil, fmt.Errorf("%w: --node-pids: %v", errUsage, err)
	}
	return pids, nil
}

// kvBenchFlags are the flags of bench upsert and bench lookup.
type kvBenchFlags struct {
	benchFlags
	keys        int64
	batch       int
	replication int
	// sharedWriter (bench upsert): the callers share one writer.
	sharedWriter bool
	// load: upsert every key first (registerLoad).
	load bool
}

func (f *kvBenchFlags) register(fs *flag.FlagSet) {
	f.registerAs(fs, "bench.kv", "DB.TABLE; created with '"+bench.KVSchema+"', PRIMARY KEY (id) if missing")
	fs.Int64Var(&f.keys, "keys", 1_000_000, "keys are drawn at random from [0, keys)")
	fs.IntVar(&f.replication, "replication", 0, "replication of a table created by the benchmark (0: the cluster's default, 3 with 3+ nodes)")
}

func (f *kvBenchFlags) registerLoad(fs *flag.FlagSet) {
	fs.BoolVar(&f.load, "load", false, "first upsert every key of [0, keys) (with --record-bytes values)")
}

func (f *kvBenchFlags) validate() error {
	if err := f.benchFlags.validate(); err != nil {
		return err
	}
	switch {
	case f.keys <= 0 || f.keys > 1e15:
		return fmt.Errorf("%w: --keys must be in [1, 1e15]", errUsage)
	case f.batch <= 0 || f.batch > client.MaxBatchKeysLimit:
		return fmt.Errorf("%w: --batch must be in [1, %d]", errUsage, client.MaxBatchKeysLimit)
	case f.replication < 0:
		return fmt.Errorf("%w: --replication must not be negative", errUsage)
	}
	return nil
}

// options are the benchmark's options, once validated.
func (f *kvBenchFlags) options() *bench.KVOptions {
	return &bench.KVOptions{Options: f.Options, Keys: f.keys, Batch: f.batch, Replication: f.replication,
		SharedWriter: f.sharedWriter, Load: f.load}
}

// openLoaded opens (creating if missing) the benchmark's table and, with
// --load, upserts every key first, reporting the time it took on stderr.
func (f *kvBenchFlags) openLoaded(ctx context.Context, c *client.Client, cf *clientFlags, env *cliEnv) (*client.Table, *bench.KVOptions, error) {
	o := f.options()
	tbl, err := openBenchTable(f.Table, func() (*client.Table, error) { return bench.OpenKVTable(ctx, c, o, cf.timeout) })
	if err != nil || !o.Load {
		return tbl, o, err
	}
	start := time.Now()
	if err := bench.LoadKeys(ctx, tbl, o); err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(env.stderr, "loaded %s in %v\n", plural(o.Keys, "key"), time.Since(start).Round(time.Millisecond))
	return tbl, o, nil
}

// sustainFlags are bench upsert's flags for a sustained run: throughput
// per interval, the first window against the last, and the disk space the
// nodes' KV folders hold against the live data.
type sustainFlags struct {
	bench.SustainOptions
	kvDirs string // comma-separated
}

func (f *sustainFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.Interval, "interval", 10*time.Second, "report the throughput of every interval (0: none)")
	fs.DurationVar(&f.Window, "window", 20*time.Second,
		"compare the throughput of the first and the last window of the run (whole intervals; needs a run of two windows)")
	fs.StringVar(&f.kvDirs, "kv-dir", "",
		"comma-separated KV folders of the nodes (DATA/tablet/kv) to size every interval and at the end, against the live data (the keys this run wrote times the row size: start from an empty table)")
}

func (f *sustainFlags) validate(keys int64) error {
	switch {
	case f.Interval < 0:
		return fmt.Errorf("%w: --interval must not be negative", errUsage)
	case f.Window < 0:
		return fmt.Errorf("%w: --window must not be negative", errUsage)
	case f.kvDirs != "" && keys > bench.MaxTrackedKeys:
		return fmt.Errorf("%w: --kv-dir needs --keys of at most %d", errUsage, bench.MaxTrackedKeys)
	}
	f.KVDirs = nil
	for d := range strings.SplitSeq(f.kvDirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			f.KVDirs = append(f.KVDirs, d)
		}
	}
	return nil
}

// printBenchResult writes the result as --output asks.
func printBenchResult(env *cliEnv, cf *clientFlags, title string, res bench.Result) error {
	return bench.PrintResult(env.stdout, title, res, cf.output == "json")
}

// openBenchTable opens (creating if missing) the benchmark's table with
// open, once its name is checked: a bad one is a usage mistake.
func openBenchTable(table string, open func() (*client.Table, error)) (*client.Table, error) {
	if _, _, err := tableName(table); err != nil {
		return nil, err
	}
	return open()
}
