package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedb/floe/cmd/floe/internal/bench"
)

// TestBenchUpsertSustained runs bench upsert with intervals and a KV
// folder to size, after loading every key: the result carries the
// intervals, the folder's size and the live data of all the keys.
func TestBenchUpsertSustained(t *testing.T) {
	server := startCluster(t).server
	kvDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(kvDir, "000001.vlog"), make([]byte, 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "bench", "upsert", "--table", "bench.sustained", "--duration", "300ms",
		"--interval", "100ms", "--window", "100ms", "--keys", "100", "--record-bytes", "64", "--kv-dir", kvDir, "--load", "--server", server)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "records/s  kv ") {
		t.Fatalf("no interval lines on stderr: %q", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res bench.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %q", lines[len(lines)-1])
	}
	s := res.Sustained
	switch {
	case s == nil:
		t.Fatalf("no sustained figures: %s", lines[len(lines)-1])
	case s.IntervalS != 0.1 || len(s.IntervalOpsPerS) == 0:
		t.Fatalf("intervals %v of %v s", s.IntervalOpsPerS, s.IntervalS)
	case len(s.KVDirBytes) != 1 || s.KVDirBytes[0] <= 0:
		t.Fatalf("kv folder sizes %v", s.KVDirBytes)
	case s.LiveKeys != 100 || s.LiveBytes <= s.LiveKeys*64 || s.SpaceAmp <= 0:
		t.Fatalf("live data %d bytes of %d keys, space held %v", s.LiveBytes, s.LiveKeys, s.SpaceAmp)
	}
}

// TestBenchUpsertSustainedUsage: bad sustained-run flags are usage errors.
func TestBenchUpsertSustainedUsage(t *testing.T) {
	server := startCluster(t).server
	for _, args := range [][]string{
		{"--interval", "-1s"},
		{"--window", "-1s"},
		{"--kv-dir", "x", "--keys", "2000000000"},
	} {
		if code, _, errOut := runCLI(t, "", append([]string{"bench", "upsert", "--server", server}, args...)...); code != 2 {
			t.Errorf("bench upsert %v: exit %d, %s", args, code, errOut)
		}
	}
}
