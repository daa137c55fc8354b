package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/integration/chaos"
)

var (
	chaosDuration   = flag.Duration("chaos.duration", 4*time.Second, "how long each chaos scenario injects faults")
	chaosSeed       = flag.Uint64("chaos.seed", 1, "the first seed of the chaos scenarios' fault schedules")
	chaosSeeds      = flag.Int("chaos.seeds", 1, "how many seeds each chaos scenario runs (from -chaos.seed on)")
	chaosReplay     = flag.String("chaos.replay", "", "a replay file a failed chaos run wrote: run its scenario and seed again")
	chaosContainers = flag.Bool("chaos.containers", false, "run the chaos scenarios' nodes as Docker containers instead of processes in network namespaces")
	chaosSecure     = flag.Bool("chaos.secure", false, "run the chaos scenarios against secure clusters (TLS, authentication, ACLs, encrypted gossip: the README's secure recipe)")
	chaosOut        = flag.String("chaos.out", filepath.Join(os.TempDir(), "floe-chaos"), "where failed chaos runs write their replay files")
)

// TestChaos runs every scenario of package chaos (TestChaos/NAME for one)
// against a 3-node cluster of the built binary, each node in a network
// namespace of its own, with a log and a key workload; every run must lose
// no acknowledged record, duplicate or reorder none, keep replicas equal
// and keys linearizable. CI runs each for a few seconds;
// `go test ./integration -run 'TestChaos/NAME' -chaos.duration=60s -chaos.seed=7 -chaos.seeds=10`
// runs one longer, and -chaos.replay=FILE runs a failed one again.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos scenarios start clusters")
	}
	if !chaosAsked() {
		// Every scenario takes minutes in all, which `go test ./...`
		// cannot spare within its 10 minutes a package; CI runs them in a
		// step of their own.
		t.Skip("the fault suite runs when asked for: go test ./integration -run TestChaos (as root)")
	}
	if err := chaos.Available(); err != nil {
		t.Skipf("%v (run the suite as root, or in a container with NET_ADMIN)", err)
	}
	if *chaosContainers {
		if err := chaos.DockerAvailable(t.Context()); err != nil {
			t.Skip(err)
		}
	}
	scenarios := chaos.Scenarios
	seed, seeds, duration := *chaosSeed, *chaosSeeds, *chaosDuration
	if *chaosReplay != "" {
		r, err := chaos.ReadReplay(*chaosReplay)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := chaos.Find(r.Scenario)
		if !ok {
			t.Fatalf("replay file names scenario %q, which this build does not have", r.Scenario)
		}
		scenarios, seed, seeds, duration = []chaos.Scenario{s}, r.Seed, 1, r.Duration
	}
	var verdicts []chaos.Verdict
	t.Cleanup(func() {
		if len(verdicts) > 0 {
			t.Logf("verdicts:\n%s", chaos.Table(verdicts))
		}
	})
	replaying := *chaosReplay != ""
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			var run []uint64
			for i := range seeds {
				run = append(run, seed+uint64(i))
			}
			if !replaying {
				for _, r := range sc.Regressions {
					if !slices.Contains(run, r) {
						run = append(run, r)
					}
				}
			}
			for _, s := range run {
				v, err := chaos.Run(t.Context(), chaos.RunConfig{Scenario: sc, Seed: s, Duration: duration, Binary: floeBin,
					Dir: t.TempDir(), ReplayDir: *chaosOut, Containers: *chaosContainers, Secure: *chaosSecure, Logf: func(format string, args ...any) { t.Logf(format, args...) }})
				if errors.Is(err, chaos.ErrNoS3Server) {
					t.Skipf("seed %d: %v", s, err)
				}
				if err != nil {
					t.Fatalf("seed %d: %v", s, err)
				}
				verdicts = append(verdicts, v)
				t.Logf("seed %d:\n%s", s, chaos.Table([]chaos.Verdict{v}))
				if !v.Pass() {
					t.Errorf("seed %d broke a promise: %+v (examples %v); replay with -chaos.replay=%s",
						s, v, v.Log.Examples, v.ReplayFile)
				}
			}
		})
	}
}

// TestChaosCommand runs `floe chaos run` as a user would: one short run of
// one scenario against clusters of the floe binary, a JSON verdict out.
func TestChaosCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if err := chaos.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, floeBin, "chaos", "run", "leader-kill", "--duration", "3s", "--seed", "3",
		"--output", "json", "--dir", t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("floe chaos run: %v\n%s", err, stderr.String())
	}
	var v chaos.Verdict
	if err := json.Unmarshal(bytes.TrimSpace(out), &v); err != nil {
		t.Fatalf("verdict %q: %v", out, err)
	}
	if v.Scenario != "leader-kill" || v.Seed != 3 || !v.Pass() || v.Log.Acknowledged == 0 || v.KV.Operations == 0 {
		t.Fatalf("verdict %+v", v)
	}
	if !strings.Contains(stderr.String(), "[1/1] leader-kill seed 3") {
		t.Errorf("no progress line on stderr: %s", stderr.String())
	}
}

// chaosAsked says whether this run asked for the fault suite by name
// (-run TestChaos..., or a replay).
func chaosAsked() bool {
	if *chaosReplay != "" {
		return true
	}
	run := flag.Lookup("test.run")
	return run != nil && strings.Contains(run.Value.String(), "TestChaos")
}
