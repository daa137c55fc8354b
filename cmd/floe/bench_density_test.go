package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// buildFloe builds this package's binary into a temporary folder: the
// density benchmark runs its node as a child process, and the test binary
// is not floe.
func buildFloe(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the floe binary with")
	}
	bin := filepath.Join(t.TempDir(), "floe")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBenchDensity: a small density run starts its node, creates the
// tables, restarts the node and reports what it measured.
func TestBenchDensity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the floe binary")
	}
	bin := buildFloe(t)
	code, out, errOut := runCLI(t, "", "bench", "density", "--tables", "2", "--buckets", "2", "--idle", "1s",
		"--binary", bin, "--data-dir", t.TempDir(), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res bench.DensityResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Tables != 2 || res.Buckets != 2 || res.RSSBytes <= 0 || res.FDs <= 0 || res.Goroutines <= 0 ||
		res.ServeS <= 0 || res.RestartS <= 0 || res.IdleCPUPercent < 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestBenchDensityUsage: bad flags are usage mistakes, found before any
// node starts.
func TestBenchDensityUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--tables", "0"},
		{"--buckets", "0"},
		{"--idle", "0s"},
		{"-o", "yaml"},
		{"extra"},
	} {
		if code, _, errOut := runCLI(t, "", append([]string{"bench", "density"}, args...)...); code != 2 {
			t.Errorf("bench density %v: exit %d, %s", args, code, errOut)
		}
	}
}
