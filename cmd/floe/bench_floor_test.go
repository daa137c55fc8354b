package main

import (
	"os"
	"strings"
	"testing"

	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// TestBenchFloor: one fsync row per writer count and the two round-trip
// rows, in the suite's line shape (system machine), every fsync and round
// trip counted and timed; a floor row per count above one, summing two
// idle round trips and that count's fsync; the text table says the same;
// the benchmark's files are gone afterwards. The echo child is this test
// binary (TestMain runs it when bench.FloorEchoEnv is set).
func TestBenchFloor(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "", "bench", "floor", "--dir", dir, "--writers", "1,3", "--duration", "200ms",
		"--binary", bin, "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows, err := bench.ReadResultLines(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	byTest := map[string]bench.SuiteRow{}
	for _, r := range rows {
		if r.Kind != "phys" || r.System != "machine" || r.ValueSize != 1024 {
			t.Errorf("row %+v: want kind phys, system machine, 1024-byte records", r)
		}
		byTest[r.Test] = r
	}
	if len(rows) != 5 || len(byTest) != 5 {
		t.Fatalf("rows %v, want fsync-1, fsync-3, rtt-idle, rtt-busy, floor-acks-all-3:\n%s", len(rows), stdout)
	}
	for _, name := range []string{"fsync-1", "fsync-3", "rtt-idle", "rtt-busy"} {
		r, ok := byTest[name]
		// Every writer syncs, and the child echoes, at least once in 200
		// ms, even on a slow machine.
		if !ok || r.Ops < int64(r.Concurrency) || r.P50us <= 0 || r.P50us > r.P99us || r.P99us > r.MaxUs || r.OpsPerSec <= 0 {
			t.Errorf("%s: %+v: not a measurement", name, r)
		}
	}
	if r := byTest["fsync-3"]; r.Concurrency != 3 {
		t.Errorf("fsync-3 has %d writers", r.Concurrency)
	}
	floor, idle, fsync3 := byTest["floor-acks-all-3"], byTest["rtt-idle"], byTest["fsync-3"]
	if want := 2*idle.P50us + fsync3.P50us; floor.P50us < want-0.01 || floor.P50us > want+0.01 {
		t.Errorf("floor p50 %v µs, want 2 idle round trips + fsync-3: %v", floor.P50us, want)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("left in --dir: %v (%v)", left, err)
	}

	code, stdout, stderr = runCLI(t, "", "bench", "floor", "--dir", dir, "--writers", "2", "--duration", "100ms", "--binary", bin)
	if code != 0 || !strings.Contains(stdout, "rtt-idle") || !strings.Contains(stdout, "2 writers at once") ||
		!strings.Contains(stdout, "floor-acks-all-2: p50") {
		t.Fatalf("text: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{{"--writers", "0"}, {"--writers", "1,x"}, {"--duration", "0s"}, {"--record-bytes", "0"},
		{"--pause", "0s"}, {"--output", "yaml"}} {
		if code, _, _ := runCLI(t, "", append([]string{"bench", "floor", "--dir", dir}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
	if code, _, stderr := runCLI(t, "", "bench", "floor", "--dir", dir+"/missing/deeper", "--duration", "100ms"); code != 1 || !strings.Contains(stderr, "bench floor") {
		t.Errorf("a folder that does not exist: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "bench", "floor", "--dir", dir, "--writers", "1", "--duration", "100ms", "--binary", dir+"/no-such-binary"); code != 1 || !strings.Contains(stderr, "echo child") {
		t.Errorf("an echo child that cannot start: exit %d, %q", code, stderr)
	}
}
