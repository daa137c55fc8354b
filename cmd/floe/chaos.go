package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floedb/floe/integration/chaos"
)

// errPromiseBroken: a `floe chaos run` verdict failed.
var errPromiseBroken = errors.New("a chaos run broke a promise")

// errNoVerdict: the harness of a `floe chaos run` failed (a cluster did not
// start, a fault's command failed, the cluster did not heal), so the run
// has no verdict, which is not a broken promise: exit status 3.
var errNoVerdict = errors.New("harness failed, no verdict")

// chaosSpecs are `floe chaos list` and `floe chaos run`: the fault
// scenarios of package chaos against clusters of this very binary.
func chaosSpecs(env *cliEnv) []cmdSpec {
	return []cmdSpec{
		{usage: "chaos list", summary: "list the fault scenarios",
			define: func(fs *flag.FlagSet) runFunc {
				var output string
				outputVar(fs, &output, "a list of {name, doc}")
				return func(ctx context.Context, pos []string) error {
					if len(pos) != 0 {
						return fmt.Errorf("%w: unexpected arguments %v", errUsage, pos)
					}
					if output == "json" {
						type scenario struct {
							Name string `json:"name"`
							Doc  string `json:"doc"`
						}
						list := make([]scenario, len(chaos.Scenarios))
						for i, s := range chaos.Scenarios {
							list[i] = scenario{Name: s.Name, Doc: s.Doc}
						}
						return printJSON(env, list)
					}
					w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "SCENARIO\tFAULTS")
					for _, s := range chaos.Scenarios {
						fmt.Fprintf(w, "%s\t%s\n", s.Name, s.Doc)
					}
					return w.Flush()
				}
			}},
		{usage: "chaos run [SCENARIO...] [--seed 1] [--seeds 1] [--duration 60s] [--containers] [--secure] [--dir DIR] [--replay FILE]",
			summary: "start 3- or 4-node clusters of this binary, inject a scenario's faults while workloads run, check what was promised",
			define: func(fs *flag.FlagSet) runFunc {
				seed := fs.Uint64("seed", 1, "the first seed of the fault schedules")
				seeds := fs.Int("seeds", 1, "how many seeds each scenario runs (from --seed on)")
				duration := fs.Duration("duration", 60*time.Second, "how long each run injects faults")
				containers := fs.Bool("containers", false, "run each node as a Docker container (needs a static binary and a Docker engine)")
				secure := fs.Bool("secure", false, "run secure clusters: TLS, authentication, ACLs and encrypted gossip, as docs/security.md's recipe")
				dir := fs.String("dir", "", "where the clusters' data and the replay files of failed runs go (default: a new temporary folder)")
				replay := fs.String("replay", "", "a replay file a failed run wrote: run its scenario and seed again")
				verbose := fs.Bool("verbose", false, "print the harness's messages (faults injected, healed)")
				var output string
				outputVar(fs, &output, "one verdict per line")
				return func(ctx context.Context, pos []string) error {
					if *seeds < 1 || *duration <= 0 {
						return fmt.Errorf("%w: --seeds must be at least 1 and --duration positive", errUsage)
					}
					scenarios, err := pickScenarios(pos)
					if err != nil {
						return err
					}
					first, count, length := *seed, *seeds, *duration
					if *replay != "" {
						if len(pos) != 0 {
							return fmt.Errorf("%w: --replay names its scenario; give no SCENARIO", errUsage)
						}
						r, err := chaos.ReadReplay(*replay)
						if err != nil {
							return fmt.Errorf("read the replay file: %w", err)
						}
						s, ok := chaos.Find(r.Scenario)
						if !ok {
							return fmt.Errorf("the replay file names scenario %q, which this build does not have", r.Scenario)
						}
						scenarios, first, count, length = []chaos.Scenario{s}, r.Seed, 1, r.Duration
					}
					if err := chaos.Available(); err != nil {
						return fmt.Errorf("%w: %w", errNoVerdict, err)
					}
					bin, err := os.Executable()
					if err != nil {
						return fmt.Errorf("find this binary: %w", err)
					}
					base := *dir
					if base == "" {
						if base, err = os.MkdirTemp("", "floe-chaos-"); err != nil {
							return err
						}
					}
					err = runChaos(ctx, env, chaosPlan{scenarios: scenarios, seed: first, seeds: count, duration: length,
						binary: bin, dir: base, containers: *containers, secure: *secure, verbose: *verbose, json: output == "json", run: chaos.Run})
					if *dir == "" {
						_ = os.Remove(base) // only if empty: every run passed
					}
					return err
				}
			}},
	}
}

// pickScenarios resolves scenario names (none: every scenario).
func pickScenarios(names []string) ([]chaos.Scenario, error) {
	if len(names) == 0 {
		return chaos.Scenarios, nil
	}
	var out []chaos.Scenario
	for _, n := range names {
		s, ok := chaos.Find(n)
		if !ok {
			var known []string
			for _, s := range chaos.Scenarios {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("%w: no scenario %q (known: %s)", errUsage, n, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

type chaosPlan struct {
	scenarios           []chaos.Scenario
	seed                uint64
	seeds               int
	duration            time.Duration
	binary, dir         string
	containers, verbose bool
	secure              bool
	json                bool
	// run runs one scenario and seed: chaos.Run.
	run func(context.Context, chaos.RunConfig) (chaos.Verdict, error)
}

// runChaos runs every scenario for every seed, one after the other,
// printing each verdict as it comes and the whole table at the end. A run
// whose harness fails ends the suite (the next runs would likely fail the
// same way) with errNoVerdict, unless an earlier run broke a promise.
func runChaos(ctx context.Context, env *cliEnv, p chaosPlan) error {
	var verdicts []chaos.Verdict
	failed := 0
	total := len(p.scenarios) * p.seeds
	for _, sc := range p.scenarios {
		for i := range p.seeds {
			s := p.seed + uint64(i)
			runDir := filepath.Join(p.dir, fmt.Sprintf("%s-%d", sc.Name, s))
			fmt.Fprintf(env.stderr, "[%d/%d] %s seed %d: %v of faults\n", len(verdicts)+1, total, sc.Name, s, p.duration)
			logf := func(string, ...any) {}
			if p.verbose {
				logf = func(format string, args ...any) {
					fmt.Fprintf(env.stderr, "  %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
				}
			}
			v, err := p.run(ctx, chaos.RunConfig{Scenario: sc, Seed: s, Duration: p.duration, Binary: p.binary,
				Dir: runDir, ReplayDir: p.dir, Containers: p.containers, Secure: p.secure, Logf: logf})
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%s seed %d: interrupted: %w", sc.Name, s, err)
				}
				err = fmt.Errorf("%s seed %d: %w: %w (data and node logs in %s)", sc.Name, s, errNoVerdict, err, runDir)
				return endChaos(env, p, verdicts, failed, err)
			}
			verdicts = append(verdicts, v)
			if p.json {
				line, _ := json.Marshal(v)
				fmt.Fprintln(env.stdout, string(line))
			}
			if !v.Pass() {
				failed++
				fmt.Fprintf(env.stderr, "%s seed %d broke a promise; replay with: floe chaos run --replay %s\n", sc.Name, s, v.ReplayFile)
				continue // keep its data and node logs for a look
			}
			_ = os.RemoveAll(runDir)
		}
	}
	return endChaos(env, p, verdicts, failed, nil)
}

// endChaos prints the table of the verdicts and returns the suite's
// error: a broken promise first (exit 1), then the harness failure
// noVerdict, if any (exit 3).
func endChaos(env *cliEnv, p chaosPlan, verdicts []chaos.Verdict, failed int, noVerdict error) error {
	if !p.json && len(verdicts) > 0 {
		fmt.Fprint(env.stdout, chaos.Table(verdicts))
	}
	if failed > 0 {
		err := fmt.Errorf("%w: %d of %d runs (replay files in %s)", errPromiseBroken, failed, len(verdicts), p.dir)
		if noVerdict != nil {
			err = fmt.Errorf("%w; then %v", err, noVerdict)
		}
		return err
	}
	return noVerdict
}
