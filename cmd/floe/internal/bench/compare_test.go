package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/suite.jsonl and testdata/peers.jsonl are a suite run and a
// peer run, in the shapes `bench suite -o json` and the peer kit's
// results.jsonl write (fields trimmed), with a progress line and a
// physical-limit line as a tee'd file holds them.

// fixture is the text of testdata/name.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompareResults: each target is checked against its own peer row
// (system, test and concurrency), ratios and latency bounds decide met,
// and a test the suite did not run is reported missing, not met.
func TestCompareResults(t *testing.T) {
	floe, err := ReadResultLines(strings.NewReader(fixture(t, "suite.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	peers, err := ReadResultLines(strings.NewReader(fixture(t, "peers.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Comparison{}
	for _, c := range Compare(floe, peers) {
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
		t.Errorf("upsert-128: a suite row without the nodes' CPU gives no CPU Comparison: %+v", c)
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
	floe := mustRows(t, floor+fixture(t, "suite.jsonl"))
	peers := mustRows(t, fixture(t, "peers.jsonl"))
	got := map[string]Comparison{}
	for _, c := range Compare(floe, peers) {
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
	for _, c := range Compare(mustRows(t, fixture(t, "suite.jsonl")), peers) {
		if c.FloorRow != "" || c.BelowFloor {
			t.Errorf("%s: a floor without bench floor rows: %+v", c.Test, c)
		}
	}
	var out strings.Builder
	if err := PrintComparison(&out, Compare(floe, peers)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "floor 0.65 ms") || !strings.Contains(out.String(), "below the machine's floor") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func mustRows(t *testing.T, text string) []SuiteRow {
	t.Helper()
	rows, err := ReadResultLines(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
