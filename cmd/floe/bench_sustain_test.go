package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCompareWindows: the first and last windows are whole intervals at
// either end of the run, and a run shorter than two windows has none.
func TestCompareWindows(t *testing.T) {
	for _, tc := range []struct {
		name             string
		rates            []float64
		interval, window time.Duration
		first, last      float64
	}{
		{"two intervals a window", []float64{100, 80, 90, 70, 60, 50}, 10 * time.Second, 20 * time.Second, 90, 55},
		{"window not a multiple rounds down", []float64{100, 80, 90, 70, 60}, 10 * time.Second, 25 * time.Second, 90, 65},
		{"window below one interval takes one", []float64{100, 50}, 10 * time.Second, time.Second, 100, 50},
		{"too short a run", []float64{100, 80, 90}, 10 * time.Second, 20 * time.Second, 0, 0},
		{"no intervals", nil, 0, 20 * time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sustainedResult{IntervalOpsPerS: tc.rates}
			r.compareWindows(tc.interval, tc.window)
			if r.FirstOpsPerS != tc.first || r.LastOpsPerS != tc.last {
				t.Fatalf("first %v, last %v; want %v, %v", r.FirstOpsPerS, r.LastOpsPerS, tc.first, tc.last)
			}
			if tc.first > 0 && math.Abs(r.LastToFirst-tc.last/tc.first) > 1e-12 {
				t.Fatalf("ratio %v, want %v", r.LastToFirst, tc.last/tc.first)
			}
		})
	}
}

// TestKeySetCountsDistinctKeys: keys added from many goroutines, some
// twice, each count once.
func TestKeySetCountsDistinctKeys(t *testing.T) {
	s := newKeySet(1000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := int64(g % 2); i < 1000; i += 2 {
				s.add(i)
			}
		})
	}
	wg.Wait()
	if n := s.count(); n != 1000 {
		t.Fatalf("count %d, want 1000", n)
	}
	all := newKeySet(70)
	all.add(3)
	all.addAll(70)
	if n := all.count(); n != 70 {
		t.Fatalf("count after addAll %d, want 70", n)
	}
}

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
	var res benchResult
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
