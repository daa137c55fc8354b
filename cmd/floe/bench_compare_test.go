package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCompareCommand: the table goes to stdout and a target not met
// exits 1 with the count; a file with no result lines is an error.
func TestBenchCompareCommand(t *testing.T) {
	// The fixtures of the comparison's own tests.
	suite, peers := filepath.Join("internal", "bench", "testdata", "suite.jsonl"), filepath.Join("internal", "bench", "testdata", "peers.jsonl")
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(empty, []byte("no results\n"), 0o644); err != nil {
		t.Fatal(err)
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
