package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// The benchmarks of the machine and of a node rather than of a workload:
// floor, density, hostile, and compare, which reads a suite's results.

// floorFlags are the flags of bench floor.
type floorFlags struct {
	bench.FloorOptions
	writers string
	output  string
}

func (f *floorFlags) validate() error {
	switch {
	case f.Duration <= 0:
		return fmt.Errorf("%w: --duration must be positive", errUsage)
	case f.RecordBytes < 1 || f.RecordBytes > 16<<20:
		return fmt.Errorf("%w: --record-bytes must be in [1, 16 MiB]", errUsage)
	case f.Pause <= 0 || f.Pause > time.Second:
		return fmt.Errorf("%w: --pause must be in (0, 1s]", errUsage)
	}
	counts, err := parseWriterCounts(f.writers)
	if err != nil {
		return err
	}
	f.WriterCounts = counts
	return nil
}

// parseWriterCounts reads --writers: comma-separated counts, each in
// [1, 64].
func parseWriterCounts(list string) ([]int, error) {
	var counts []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("%w: --writers: %q is not a count in [1, 64]", errUsage, s)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func benchFloorSpec(env *cliEnv) cmdSpec {
	var f floorFlags
	return cmdSpec{usage: "bench floor [--dir DIR] [--writers 1,2,3] [--duration 3s] [--record-bytes 1024] [--pause 1ms] [--output text|json]",
		summary: "what this machine allows a local cluster: fdatasync with 1, 2, 3 writers at once, the round trip between idle processes, and the least an acks=all write can take",
		define: func(fs *flag.FlagSet) runFunc {
			fs.StringVar(&f.Dir, "dir", "", "a folder on the disk to measure, where the nodes' data goes (default: the system's temporary folder); the benchmark's files are removed at the end")
			fs.StringVar(&f.writers, "writers", "1,2,3", "comma-separated writer counts, one row each: 1 is a node's commit, N the commit of N replicas sharing this disk")
			fs.DurationVar(&f.Duration, "duration", 3*time.Second, "how long each row measures")
			fs.IntVar(&f.RecordBytes, "record-bytes", 1024, "bytes appended before each fdatasync, and of each round trip's message")
			fs.DurationVar(&f.Pause, "pause", time.Millisecond, "the pause before each idle round trip")
			fs.StringVar(&f.Binary, "binary", "", "the floe binary the echo child runs (default: this one)")
			outputVar(fs, &f.output, "one line per row, the peer kit's physical-limit fields")
			return func(ctx context.Context, pos []string) error {
				if os.Getenv(bench.FloorEchoEnv) != "" {
					return bench.RunFloorEcho(os.Stdin, os.Stdout)
				}
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if err := f.validate(); err != nil {
					return err
				}
				rows, err := bench.Floor(ctx, &f.FloorOptions, env.stderr)
				if err != nil {
					return err
				}
				if f.output == "json" {
					printJSONLines(env, rows)
					return nil
				}
				return bench.PrintFloorRows(env.stdout, &f.FloorOptions, rows)
			}
		}}
}

// printJSONLines prints each row as one line of JSON.
func printJSONLines[T any](env *cliEnv, rows []T) {
	for _, r := range rows {
		line, _ := json.Marshal(r)
		fmt.Fprintln(env.stdout, string(line))
	}
}

// densityFlags are the flags of bench density.
type densityFlags struct {
	bench.DensityOptions
	output string
}

func (f *densityFlags) validate() error {
	switch {
	case f.Tables < 1 || f.Tables > 100_000:
		return fmt.Errorf("%w: --tables must be in [1, 100000]", errUsage)
	case f.Buckets < 1 || f.Buckets > 1024:
		return fmt.Errorf("%w: --buckets must be in [1, 1024]", errUsage)
	case f.Idle <= 0:
		return fmt.Errorf("%w: --idle must be positive", errUsage)
	case f.Timeout <= 0:
		return fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	return nil
}

func benchDensitySpec(env *cliEnv) cmdSpec {
	var f densityFlags
	return cmdSpec{usage: "bench density [--tables 10] [--buckets 8] [--idle 10s] [--data-dir DIR] [--binary PATH]",
		summary: "what idle tables cost a node: starts its own floe dev, creates tables, measures CPU, memory, fds, goroutines and restart",
		define: func(fs *flag.FlagSet) runFunc {
			fs.IntVar(&f.Tables, "tables", 10, "tables to create, half log tables, half primary-key tables")
			fs.IntVar(&f.Buckets, "buckets", 8, "buckets per table")
			fs.DurationVar(&f.Idle, "idle", 10*time.Second, "window over which the idle node's CPU is measured")
			fs.StringVar(&f.DataDir, "data-dir", "", "the node's data folder (default: a temporary folder, removed at the end)")
			fs.StringVar(&f.Binary, "binary", "", "the floe binary to run the node with (default: this one)")
			outputVar(fs, &f.output, "")
			fs.DurationVar(&f.Timeout, "timeout", 5*time.Minute, "give up when the tables are not all served within this long after a start")
			return func(ctx context.Context, pos []string) error {
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if err := f.validate(); err != nil {
					return err
				}
				res, err := bench.Density(ctx, &f.DensityOptions, env.stderr)
				if err != nil {
					return err
				}
				if f.output == "json" {
					return printJSON(env, res)
				}
				return bench.PrintDensityResult(env.stdout, res)
			}
		}}
}

// hostileFlags are the flags of bench hostile.
type hostileFlags struct {
	bench.HostileOptions
	nodePIDs string
	attacks  string
	output   string
}

func (f *hostileFlags) validate() error {
	switch {
	case f.Duration <= 0:
		return fmt.Errorf("%w: --duration must be positive", errUsage)
	case f.Conns < 1 || f.Conns > 256:
		return fmt.Errorf("%w: --conns must be in [1, 256]", errUsage)
	}
	pids, err := parseNodePIDs(f.nodePIDs)
	if err != nil {
		return err
	}
	if len(pids) > 1 {
		return fmt.Errorf("%w: --node-pids: bench hostile measures one node", errUsage)
	}
	if len(pids) == 1 {
		f.PID = pids[0]
	}
	all := bench.HostileAttackNames()
	f.Attacks = nil
	if f.attacks == "" {
		f.Attacks = all
		return nil
	}
	for _, name := range strings.Split(f.attacks, ",") {
		if !slices.Contains(all, strings.TrimSpace(name)) {
			return fmt.Errorf("%w: --attacks: unknown attack %q", errUsage, name)
		}
		f.Attacks = append(f.Attacks, strings.TrimSpace(name))
	}
	return nil
}

func benchHostileSpec(env *cliEnv) cmdSpec {
	var f hostileFlags
	return cmdSpec{usage: "bench hostile [--addr HOST:PORT --node-pids PID | --binary PATH] [--duration 30s] [--conns 8] [--attacks a,b] [-o text|json]",
		summary: "send a node hostile requests and connections while a client writes; report its peak memory, whether it stayed up and the client's successes",
		define: func(fs *flag.FlagSet) runFunc {
			fs.StringVar(&f.Addr, "addr", "", "the node to attack (default: start a floe dev node of --binary on a temporary folder)")
			fs.StringVar(&f.nodePIDs, "node-pids", "", "the process id of the --addr node, for its memory (/proc/PID/status)")
			fs.StringVar(&f.Binary, "binary", "", "the floe binary of the node started without --addr (default: this one)")
			fs.StringVar(&f.DataDir, "data-dir", "", "the started node's folder (default: a temporary one, removed at the end)")
			fs.DurationVar(&f.Duration, "duration", 30*time.Second, "how long each attack runs")
			fs.IntVar(&f.Conns, "conns", 8, "connections sending each request attack at once")
			fs.StringVar(&f.attacks, "attacks", "", "comma-separated attacks to run (default all): "+strings.Join(bench.HostileAttackNames(), ", "))
			outputVar(fs, &f.output, "")
			return func(ctx context.Context, pos []string) error {
				if len(pos) != 0 {
					return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
				}
				if err := f.validate(); err != nil {
					return err
				}
				rows, err := bench.Hostile(ctx, &f.HostileOptions, env.stderr)
				if err != nil {
					return err
				}
				if f.output == "json" {
					printJSONLines(env, rows)
					return nil
				}
				bench.PrintHostileRows(env.stdout, rows)
				return nil
			}
		}}
}

func benchCompareSpec(env *cliEnv) cmdSpec {
	var output string
	return cmdSpec{usage: "bench compare SUITE.jsonl PEERS.jsonl [--output text|json]",
		summary: "check a `bench suite -o json` run against the peer kit's results.jsonl from the same machine: ratios and targets",
		define: func(fs *flag.FlagSet) runFunc {
			outputVar(fs, &output, "")
			return func(_ context.Context, pos []string) error {
				if len(pos) != 2 {
					return fmt.Errorf("%w: want SUITE.jsonl and PEERS.jsonl, got %d arguments", errUsage, len(pos))
				}
				var sides [2][]bench.SuiteRow
				for i, path := range pos {
					f, err := os.Open(path)
					if err != nil {
						return err
					}
					rows, err := bench.ReadResultLines(f)
					f.Close()
					if err != nil {
						return fmt.Errorf("%s: %w", path, err)
					}
					if len(rows) == 0 {
						return fmt.Errorf("%s: no result lines", path)
					}
					sides[i] = rows
				}
				// A target not met exits 1, after the table.
				cmp := bench.Compare(sides[0], sides[1])
				if output == "json" {
					enc := json.NewEncoder(env.stdout)
					enc.SetEscapeHTML(false)
					for _, c := range cmp {
						if err := enc.Encode(c); err != nil {
							return err
						}
					}
				} else if err := bench.PrintComparison(env.stdout, cmp); err != nil {
					return err
				}
				if missed := bench.CountMissed(cmp); missed > 0 {
					return fmt.Errorf("%d of %d targets not met", missed, len(cmp))
				}
				return nil
			}
		}}
}
