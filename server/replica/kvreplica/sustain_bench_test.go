//go:build unix

package kvreplica

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/floedb/floe/internal/diskusage"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/record"
)

var (
	sustainFor       = flag.Duration("kv.sustain", 2*time.Minute, "BenchmarkSustainedOverwrites: how long to upsert")
	sustainThreshold = flag.Int64("kv.value-threshold", 0, "BenchmarkSustainedOverwrites: kvstore.Config.ValueThresholdBytes (0: default)")
	sustainDiscard   = flag.Float64("kv.gc-discard", 0, "BenchmarkSustainedOverwrites: kvstore.Config.GCDiscardRatio (0: default)")
	sustainRate      = flag.Int("kv.rate", 20000, "BenchmarkSustainedOverwrites: rows/s the node's stores apply together (0: as fast as they can)")
)

// Sustained-overwrite workload: a node's share of a three-bucket table of
// a million keys, 1 KiB rows, applied in batches of 500, its throughput
// compared per window.
const (
	sustainStores    = 3
	sustainKeys      = 1_000_000
	sustainRowBytes  = 1024
	sustainBatchRows = 500
	sustainInterval  = 10 * time.Second
	sustainWindow    = 2 // intervals
)

// BenchmarkSustainedOverwrites is a node's KV side under -kv.sustain
// (default 2 minutes) of upserts of random keys over a million, spread
// over three stores (a table's buckets) that apply batches of 500 1 KiB
// rows at once, -kv.rate rows/s in all (a node of a cluster applies what
// its log and replication let through), with the node's value-log
// collector running. It reports the rows/s and the process's CPU time per
// row of the first and the last 20 s, their ratios (on a node short of
// CPU, throughput falls as CPU per row grows), and the disk space the
// database holds at the end over the live rows (keys written times the
// row size), plus Badger's value-log rewrites and compactions. Run it
// once: -benchtime 1x.
func BenchmarkSustainedOverwrites(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		events := &badgerEvents{}
		tables, err := New(Config{
			DB:     kvstore.Config{Dir: dir, ValueThresholdBytes: *sustainThreshold, GCDiscardRatio: *sustainDiscard},
			Logger: slog.New(events)})
		if err != nil {
			b.Fatal(err)
		}
		w, liveKeys := sustainUpserts(b, tables.db, *sustainFor, *sustainRate)
		held, err := diskusage.Bytes(dir)
		if err != nil {
			b.Fatal(err)
		}
		tables.Close()

		if len(w) >= 2*sustainWindow {
			first, last := sumWindows(w[:sustainWindow]), sumWindows(w[len(w)-sustainWindow:])
			b.ReportMetric(first.rowsPerS(), "first20s_rows/s")
			b.ReportMetric(last.rowsPerS(), "last20s_rows/s")
			b.ReportMetric(last.rowsPerS()/first.rowsPerS(), "last/first")
			b.ReportMetric(first.cpuPerRow(), "first20s_cpu_µs/row")
			b.ReportMetric(last.cpuPerRow(), "last20s_cpu_µs/row")
			b.ReportMetric(last.cpuPerRow()/first.cpuPerRow(), "cpu_last/first")
		}
		b.ReportMetric(float64(held)/float64(liveKeys*sustainRowBytes), "held/live")
		b.ReportMetric(float64(events.rewrites.Load()), "vlog_rewrites")
		b.ReportMetric(float64(events.compactions.Load()), "compactions")
		for i, x := range w {
			b.Logf("%3d s: %6.0f rows/s, %5.1f µs CPU a row", (i+1)*int(sustainInterval/time.Second), x.rowsPerS(), x.cpuPerRow())
		}
		b.Logf("held %.0f MiB for %d live keys", float64(held)/(1<<20), liveKeys)
	}
}

// sustainSample is what one interval (or a sum of them) measured.
type sustainSample struct {
	rows int64
	took time.Duration
	cpu  time.Duration
}

func (s sustainSample) rowsPerS() float64 { return float64(s.rows) / s.took.Seconds() }

func (s sustainSample) cpuPerRow() float64 {
	return float64(s.cpu.Microseconds()) / float64(max(s.rows, 1))
}

func sumWindows(w []sustainSample) sustainSample {
	var sum sustainSample
	for _, s := range w {
		sum.rows += s.rows
		sum.took += s.took
		sum.cpu += s.cpu
	}
	return sum
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sustainUpserts runs the stores' writers for d, rate rows/s in all (0:
// unpaced), and returns what each interval measured and the number of
// keys written.
func sustainUpserts(b *testing.B, db *kvstore.DB, d time.Duration, rate int) (w []sustainSample, liveKeys int64) {
	pool := make([]byte, 1<<20+sustainRowBytes)
	rand.Read(pool)
	ctx, cancel := context.WithTimeout(b.Context(), d)
	defer cancel()
	var applied atomic.Int64
	written := make([]int64, sustainStores)
	var wg sync.WaitGroup
	for i := range sustainStores {
		s, err := db.Open(kvstore.StoreID{Table: 1, Bucket: uint32(i)})
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			defer s.Close()
			written[i] = upsertUntil(ctx, b, s, int64(i), pool, rate/sustainStores, &applied)
		})
	}
	tick := time.NewTicker(sustainInterval)
	defer tick.Stop()
	last, lastAt, lastCPU := int64(0), time.Now(), processCPU(b)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case now := <-tick.C:
			n, cpu := applied.Load(), processCPU(b)
			w = append(w, sustainSample{rows: n - last, took: now.Sub(lastAt), cpu: cpu - lastCPU})
			last, lastAt, lastCPU = n, now, cpu
		}
	}
	wg.Wait()
	for _, n := range written {
		liveKeys += n
	}
	return w, liveKeys
}

// upsertUntil applies batches of random keys of the store's share until
// ctx ends, rate rows/s (0: unpaced), counting rows in applied; it returns
// how many keys it wrote.
func upsertUntil(ctx context.Context, b *testing.B, s *kvstore.Store, store int64, pool []byte, rate int, applied *atomic.Int64) int64 {
	const share = sustainKeys / sustainStores
	rng := mrand.New(mrand.NewPCG(uint64(store), 1))
	seen := make([]bool, share)
	var distinct int64
	entries := make([]kvstore.Change, sustainBatchRows)
	next := int64(0)
	var pace <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Second * sustainBatchRows / time.Duration(rate))
		defer t.Stop()
		pace = t.C
	}
	for ctx.Err() == nil {
		if pace != nil {
			select {
			case <-ctx.Done():
				return distinct
			case <-pace:
			}
		}
		for i := range entries {
			k := rng.IntN(share)
			if !seen[k] {
				seen[k] = true
				distinct++
			}
			off := rng.IntN(1 << 20)
			entries[i] = kvstore.Change{Key: fmt.Appendf(nil, "k%015d", store*share+int64(k)),
				Row: pool[off : off+sustainRowBytes], Kind: record.UpdateAfter}
		}
		next += int64(len(entries))
		if err := s.Apply(entries, next); err != nil {
			b.Error(err)
			return distinct
		}
		applied.Add(int64(len(entries)))
	}
	return distinct
}

// badgerEvents counts Badger's value-log rewrites and compactions from
// its log messages.
type badgerEvents struct {
	rewrites, compactions atomic.Int64
}

func (h *badgerEvents) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *badgerEvents) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "Rewriting fid"):
		h.rewrites.Add(1)
	case strings.Contains(r.Message, "LOG Compact ") && !strings.Contains(r.Message, "FAILED"):
		h.compactions.Add(1)
	}
	return nil
}

func (h *badgerEvents) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *badgerEvents) WithGroup(string) slog.Handler      { return h }
