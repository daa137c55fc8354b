package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// TestBenchHostile: a short run starts its node, sends two request attacks
// beside the normal client and reports the node up, the attacks refused
// and the client's calls succeeding.
func TestBenchHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the floe binary")
	}
	bin := buildFloe(t)
	code, out, errOut := runCLI(t, "", "bench", "hostile", "--binary", bin, "--data-dir", t.TempDir(),
		"--duration", "1s", "--conns", "2", "--attacks", "zstd-bomb,db-name", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rows []bench.HostileRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r bench.HostileRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%v in %q", err, sc.Text())
		}
		rows = append(rows, r)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %s", len(rows), out)
	}
	for _, r := range rows {
		if !r.NodeUp || r.Attempts == 0 || r.Refused == 0 || r.IdleRSS <= 0 || r.PeakRSS <= 0 || r.ClientOK == 0 {
			t.Fatalf("row %+v: want the node up, attacks refused, memory measured, client calls succeeding", r)
		}
	}
}

// TestBenchHostileUsage: bad flags are usage mistakes, found before any
// node starts.
func TestBenchHostileUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--duration", "0s"},
		{"--conns", "0"},
		{"--attacks", "nope"},
		{"--node-pids", "1,2"},
		{"-o", "yaml"},
		{"extra"},
	} {
		if code, _, errOut := runCLI(t, "", append([]string{"bench", "hostile"}, args...)...); code != 2 {
			t.Errorf("bench hostile %v: exit %d, %s", args, code, errOut)
		}
	}
}
