package bench

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/diskusage"
)

// MaxTrackedKeys bounds the key set bench upsert keeps to size the live
// data (--kv-dir): one bit a key, 128 MiB at most.
const MaxTrackedKeys = 1 << 30

// SustainOptions are bench upsert's options for a sustained run:
// throughput per interval, the first window against the last, and the disk
// space the nodes' KV folders hold against the live data.
type SustainOptions struct {
	// Interval: report the throughput of every interval (0: none).
	Interval time.Duration
	// Window: compare the mean throughput of the first and the last
	// window (whole intervals).
	Window time.Duration
	// KVDirs are the nodes' KV folders to size every interval and at the
	// end; at most MaxTrackedKeys keys then.
	KVDirs []string
}

// SustainedResult is what a sustained run adds to bench upsert's result.
type SustainedResult struct {
	IntervalS       float64   `json:"interval_s"`
	IntervalOpsPerS []float64 `json:"interval_ops_per_s"`
	// The mean throughput of the first and the last window, and last over
	// first; absent when the run is shorter than two windows.
	WindowS      float64 `json:"window_s,omitempty"`
	FirstOpsPerS float64 `json:"first_ops_per_s,omitempty"`
	LastOpsPerS  float64 `json:"last_ops_per_s,omitempty"`
	LastToFirst  float64 `json:"last_to_first,omitempty"`
	// KVDirBytes is the disk space each --kv-dir holds once every ack is
	// in; LiveBytes the rows of the keys written (LiveKeys) times the row
	// size; SpaceAmp the largest folder over LiveBytes.
	KVDirBytes []int64 `json:"kv_dir_bytes,omitempty"`
	LiveKeys   int64   `json:"live_keys,omitempty"`
	LiveBytes  int64   `json:"live_bytes,omitempty"`
	SpaceAmp   float64 `json:"space_amp,omitempty"`
}

// compareWindows sets the window figures from the interval rates.
func (r *SustainedResult) compareWindows(interval, window time.Duration) {
	if interval <= 0 || window <= 0 {
		return
	}
	n := max(1, int(window/interval))
	if len(r.IntervalOpsPerS) < 2*n {
		return
	}
	mean := func(rates []float64) float64 {
		sum := 0.0
		for _, v := range rates {
			sum += v
		}
		return sum / float64(len(rates))
	}
	r.WindowS = (time.Duration(n) * interval).Seconds()
	r.FirstOpsPerS = mean(r.IntervalOpsPerS[:n])
	r.LastOpsPerS = mean(r.IntervalOpsPerS[len(r.IntervalOpsPerS)-n:])
	if r.FirstOpsPerS > 0 {
		r.LastToFirst = r.LastOpsPerS / r.FirstOpsPerS
	}
}

// sizeDirs sets KVDirBytes and SpaceAmp from the folders and the live data.
func (r *SustainedResult) sizeDirs(dirs []string, live *keySet, rowBytes int) error {
	if len(dirs) == 0 {
		return nil
	}
	sizes, err := dirsBytes(dirs)
	if err != nil {
		return err
	}
	r.KVDirBytes = sizes
	r.LiveKeys = live.count()
	r.LiveBytes = r.LiveKeys * int64(rowBytes)
	if r.LiveBytes > 0 {
		r.SpaceAmp = float64(slices.Max(sizes)) / float64(r.LiveBytes)
	}
	return nil
}

// dirsBytes returns the disk space each folder holds.
func dirsBytes(dirs []string) ([]int64, error) {
	sizes := make([]int64, len(dirs))
	for i, d := range dirs {
		n, err := diskusage.Bytes(d)
		if err != nil {
			return nil, err
		}
		sizes[i] = n
	}
	return sizes, nil
}

// formatDirs is the folders' sizes for a report line.
func formatDirs(sizes []int64) string {
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return strings.Join(parts, ", ")
}

// intervalMeter counts a run's acknowledged writes (acked, added to by
// the callers) and samples the count every interval until the run's
// duration is over.
type intervalMeter struct {
	acked atomic.Int64
	done  chan struct{}
	rates []float64 // written by the sampler until done is closed
}

// startIntervalMeter samples every interval for duration (a last, shorter
// interval included), calling report with each interval's end and rate.
func startIntervalMeter(ctx context.Context, interval, duration time.Duration, report func(end time.Duration, opsPerS float64)) *intervalMeter {
	m := &intervalMeter{done: make(chan struct{})}
	if interval <= 0 {
		close(m.done)
		return m
	}
	go func() {
		defer close(m.done)
		start := time.Now()
		end := time.NewTimer(duration)
		defer end.Stop()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		last, lastAt := int64(0), start
		sample := func(now time.Time) {
			n := m.acked.Load()
			rate := float64(n-last) / max(now.Sub(lastAt).Seconds(), 1e-9)
			m.rates = append(m.rates, rate)
			report(now.Sub(start), rate)
			last, lastAt = n, now
		}
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-end.C:
				if now.Sub(lastAt) >= interval/2 {
					sample(now) // a last interval long enough to say something
				}
				return
			case now := <-tick.C:
				sample(now)
			}
		}
	}()
	return m
}

// wait returns the rates of the intervals, once the duration is over.
func (m *intervalMeter) wait() []float64 {
	<-m.done
	return m.rates
}

// IntervalReporter prints one line per interval to w, with the folders'
// sizes when there are any.
func IntervalReporter(w io.Writer, dirs []string) func(time.Duration, float64) {
	return func(end time.Duration, opsPerS float64) {
		line := fmt.Sprintf("%6.0f s  %9.0f records/s", end.Seconds(), opsPerS)
		if len(dirs) > 0 {
			if sizes, err := dirsBytes(dirs); err == nil {
				line += "  kv " + formatDirs(sizes)
			}
		}
		fmt.Fprintln(w, line)
	}
}

// keySet is a set of key indexes in [0, n), safe for concurrent adds.
type keySet struct {
	words []atomic.Uint64
}

func newKeySet(n int64) *keySet { return &keySet{words: make([]atomic.Uint64, (n+63)/64)} }

func (s *keySet) add(i int64) { s.words[i/64].Or(1 << (i % 64)) }

// addAll adds every key of [0, n).
func (s *keySet) addAll(n int64) {
	for i := range n {
		s.add(i)
	}
}

func (s *keySet) count() int64 {
	n := 0
	for i := range s.words {
		n += bits.OnesCount64(s.words[i].Load())
	}
	return int64(n)
}
