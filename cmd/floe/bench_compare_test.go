package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A suite run and a peer run, in the shapes `bench suite -o json` and the
// peer kit's results.jsonl write (fields trimmed), with a progress line
// and a physical-limit line as a tee'd file holds them.
const (
	compareSuiteLines = `[1/9] append-1 (one caller), 10s
{"kind":"floe","system":"floe","test":"append-1","concurrency":1,"ops_per_sec":1500,"p50_us":450,"p99_us":1300}
{"kind":"floe","system":"floe","test":"append-64","concurrency":64,"ops":120000,"ops_per_sec":12000,"p50_us":4000,"p99_us":9000,"server_cpu_s":16.8,"client_cpu_s":4.2,"server_cpu_us_per_op":140,"client_cpu_us_per_op":35}
{"kind":"floe","system":"floe","test":"append-64-shared","concurrency":64,"ops_per_sec":21000,"p50_us":2600,"p99_us":5000}
{"kind":"floe","system":"floe","test":"e2e-10000","concurrency":1,"ops_per_sec":10000,"p50_us":1100,"p99_us":12500}
{"kind":"floe","system":"floe","test":"upsert-1","concurrency":1,"ops_per_sec":1200,"p50_us":820,"p99_us":1800}
{"kind":"floe","system":"floe","test":"upsert-128","concurrency":128,"ops":110000,"ops_per_sec":11000,"p50_us":10000,"p99_us":37000,"client_cpu_s":3}
{"kind":"floe","system":"floe","test":"upsert-8x500","concurrency":8,"pipeline":500,"ops_per_sec":30000,"p50_us":110000,"p99_us":320000}
{"kind":"floe","system":"floe","test":"lookup-32x500","concurrency":32,"pipeline":500,"ops_per_sec":900000,"p50_us":22000,"p99_us":51000}
`
	comparePeerLines = `{"kind":"phys","name":"append+fdatasync 1024B","ops_per_sec":4000,"p50_us":230}
{"kind":"peer","system":"nats-jetstream","test":"append sync (publish+ack)","concurrency":1,"ops_per_sec":4000,"p50_us":224}
{"kind":"peer","system":"nats-jetstream","test":"append sync (publish+ack)","concurrency":64,"ops":50000,"ops_per_sec":10000,"p50_us":2800,"server_cpu_s":6.5,"client_cpu_s":1.5,"server_cpu_us_per_op":130}
{"kind":"peer","system":"nats-kv","test":"upsert (put)","concurrency":128,"ops":25000,"ops_per_sec":5000,"p50_us":6000,"server_cpu_s":5,"client_cpu_s":1}
{"kind":"peer","system":"redis-aof-everysec","test":"upsert (SET)","concurrency":128,"ops_per_sec":99000,"p50_us":1100}
{"kind":"peer","system":"redis-aof-always","test":"upsert (SET)","concurrency":128,"ops_per_sec":25000,"p50_us":1800}
{"kind":"peer","system":"redis-aof-everysec","test":"point lookup (GET) pipelined","concurrency":4,"pipeline":64,"ops_per_sec":750000,"p50_us":276}
`
)

// TestCompareResults: each target is checked against its own peer row
// (system, test and concurrency), ratios and latency bounds decide met,
// and a test the suite did not run is reported missing, not met.
func TestCompareResults(t *testing.T) {
	floe, err := readResultLines(strings.NewReader(compareSuiteLines))
	if err != nil {
		t.Fatal(err)
	}
	peers, err := readResultLines(strings.NewReader(comparePeerLines))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]comparison{}
	for _, c := range compareResults(floe, peers) {
		got[c.Test] = c
	}
	if len(got) != len(benchTargets) {
		t.Fatalf("%d comparisons, want one per target (%d)", len(got), len(benchTargets))
	}
	for _, want := range []struct {
		test    string
		ratio   float64
		met     bool
		missing string
	}{
		{test: "append-64", ratio: 1.2, met: true},        // 12000 / 10000 at 64, not the row at 1
		{test: "append-64-shared", ratio: 2.1, met: true}, // 21000 / 10000
		{test: "upsert-128", ratio: 2.2, met: true},       // 11000 / 5000
		{test: "upsert-8x500", ratio: 1.2, met: true},     // 30000 / 25000: AOF always, not everysec
		{test: "lookup-32x500", ratio: 1.2, met: true},    // 900000 / 750000, the pipelined row
		{test: "upsert-128-shared", missing: "floe"},      // not in the run
		{test: "append-1", met: true},                     // 0.45 ms <= 0.5
		{test: "upsert-1", met: true},                     // 0.82 ms <= 1
		{test: "e2e-10000", met: false},                   // p99 12.5 ms > 10
	} {
		c := got[want.test]
		if c.Missing != want.missing || c.Met != want.met {
			t.Errorf("%s: met %v missing %q, want met %v missing %q (%+v)", want.test, c.Met, c.Missing, want.met, want.missing, c)
		}
		if want.ratio != 0 && (c.Ratio < want.ratio-0.001 || c.Ratio > want.ratio+0.001) {
			t.Errorf("%s: ratio %.3f, want %.3f (%+v)", want.test, c.Ratio, want.ratio, c)
		}
	}
	if c := got["e2e-10000"]; c.Floe != 12.5 {
		t.Errorf("e2e-10000 is judged by its p99: %v ms, want 12.5", c.Floe)
	}
	// CPU per op, servers and client together, when both rows have their
	// servers': (16.8+4.2) s / 120000 against (6.5+1.5) s / 50000.
	if c := got["append-64"]; c.FloeCPUusOp != 175 || c.PeerCPUusOp != 160 {
		t.Errorf("append-64 CPU per op: floe %v, peer %v; want 175 and 160", c.FloeCPUusOp, c.PeerCPUusOp)
	}
	if c := got["upsert-128"]; c.FloeCPUusOp != 0 || c.PeerCPUusOp != 0 {
		t.Errorf("upsert-128: a suite row without the nodes' CPU gives no CPU comparison: %+v", c)
	}
}

// TestBenchCompareCommand: the table goes to stdout and a target not met
// exits 1 with the count; a file with no result lines is an error.
func TestBenchCompareCommand(t *testing.T) {
	dir := t.TempDir()
	suite, peers, empty := filepath.Join(dir, "floe.jsonl"), filepath.Join(dir, "peers.jsonl"), filepath.Join(dir, "empty.jsonl")
	for path, text := range map[string]string{suite: compareSuiteLines, peers: comparePeerLines, empty: "no results\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, "", "bench", "compare", suite, peers)
	if code != 1 || !strings.Contains(stderr, "2 of 9 targets not met") {
		t.Fatalf("exit %d, stderr %q: want 1 and the count of targets not met", code, stderr)
	}
	if !strings.Contains(stdout, "lookup-32x500") || !strings.Contains(stdout, "1.20x") || !strings.Contains(stdout, "redis-aof-everysec") ||
		!strings.Contains(stdout, "175.0/160.0") {
		t.Fatalf("table:\n%s", stdout)
	}
	if code, _, stderr := runCLI(t, "", "bench", "compare", suite, empty); code != 1 || !strings.Contains(stderr, "no result lines") {
		t.Fatalf("a file without results: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "", "bench", "compare", suite); code != 2 {
		t.Fatalf("one file: exit %d, want 2 (usage)", code)
	}
}

// TestCompareFloor: with bench floor's rows in a file, the latency bounds
// on one caller's acks=all writes carry the machine's floor (two idle
// round trips and an fdatasync of three at once), and a bound below it is
// flagged as such; the floor says nothing of whether the bound is met.
func TestCompareFloor(t *testing.T) {
	floor := `{"kind":"phys","system":"machine","test":"fsync-3","concurrency":3,"ops_per_sec":4500,"p50_us":300,"p99_us":1300}
{"kind":"phys","system":"machine","test":"rtt-idle","concurrency":1,"p50_us":150,"p99_us":400}
{"kind":"phys","system":"machine","test":"floor-acks-all-2","concurrency":1,"p50_us":500,"p99_us":2000}
{"kind":"phys","system":"machine","test":"floor-acks-all-3","concurrency":1,"p50_us":650,"p99_us":2100}
`
	floe := mustRows(t, floor+compareSuiteLines)
	peers := mustRows(t, comparePeerLines)
	got := map[string]comparison{}
	for _, c := range compareResults(floe, peers) {
		got[c.Test] = c
	}
	if c := got["append-1"]; c.FloorRow != "floor" || c.FloorMs != 0.65 || !c.BelowFloor || !c.Met {
		t.Errorf("append-1 (bound 0.5 ms, floor of 3 replicas 0.65 ms, measured 0.45): %+v", c)
	}
	if c := got["upsert-1"]; c.FloorMs != 0.65 || c.BelowFloor || !c.Met {
		t.Errorf("upsert-1 (bound 1 ms over the 0.65 ms floor): %+v", c)
	}
	if c := got["e2e-10000"]; c.FloorRow != "" {
		t.Errorf("e2e has no floor (its writer batches): %+v", c)
	}
	// Without the rows, no floor.
	for _, c := range compareResults(mustRows(t, compareSuiteLines), peers) {
		if c.FloorRow != "" || c.BelowFloor {
			t.Errorf("%s: a floor without bench floor rows: %+v", c.Test, c)
		}
	}
	var out strings.Builder
	if err := printComparison(&out, compareResults(floe, peers)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "floor 0.65 ms") || !strings.Contains(out.String(), "below the machine's floor") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func mustRows(t *testing.T, text string) []suiteRow {
	t.Helper()
	rows, err := readResultLines(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
