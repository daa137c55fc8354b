package bench

import (
	"math"
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
			r := SustainedResult{IntervalOpsPerS: tc.rates}
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
