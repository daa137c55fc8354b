package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"text/tabwriter"
	"time"
)

// maxLatencySamples bounds the latencies a benchmark keeps, over all its
// goroutines: up to it every latency is kept, beyond it a uniform sample.
const maxLatencySamples = 1 << 20

// reservoir keeps a uniform sample of at most size latencies (Vitter's
// algorithm R) and exact count, sum and maximum. Not safe for concurrent
// use: each goroutine keeps its own and they are merged at the end.
type reservoir struct {
	size    int
	samples []time.Duration
	count   int64
	sum     time.Duration
	max     time.Duration
	rng     *rand.Rand
}

func newReservoir(size int) *reservoir {
	return &reservoir{size: max(size, 1), rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

func (r *reservoir) add(d time.Duration) {
	r.count++
	r.sum += d
	r.max = max(r.max, d)
	if len(r.samples) < r.size {
		r.samples = append(r.samples, d)
		return
	}
	if j := r.rng.Int64N(r.count); j < int64(r.size) {
		r.samples[j] = d
	}
}

// latencyStats summarizes merged reservoirs. Goroutines of one benchmark
// record at similar rates, so their samples are merged as they are.
type latencyStats struct {
	count                     int64
	p50, p99, p999, max, mean time.Duration
}

func mergeLatencies(rs []*reservoir) latencyStats {
	var st latencyStats
	var all []time.Duration
	var sum time.Duration
	for _, r := range rs {
		all = append(all, r.samples...)
		st.count += r.count
		sum += r.sum
		st.max = max(st.max, r.max)
	}
	if len(all) == 0 {
		return st
	}
	slices.Sort(all)
	at := func(q float64) time.Duration {
		i := int(q * float64(len(all)))
		return all[min(i, len(all)-1)]
	}
	st.p50, st.p99, st.p999 = at(0.50), at(0.99), at(0.999)
	st.mean = sum / time.Duration(st.count)
	return st
}

// Result is what a benchmark prints: a table for people, then one
// JSON object on the last line for scripts.
type Result struct {
	Mode    string `json:"mode"`
	Records int64  `json:"records"`
	Errors  int64  `json:"errors"`
	Missing int64  `json:"missing,omitempty"`
	// Misses counts the keys a lookup benchmark did not find.
	Misses      *int64  `json:"misses,omitempty"`
	DurationS   float64 `json:"duration_s"`
	OpsPerS     float64 `json:"ops_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	P999Ms      float64 `json:"p999_ms"`
	MaxMs       float64 `json:"max_ms"`
	MeanMs      float64 `json:"mean_ms"`
	Concurrency int     `json:"concurrency"`
	RecordBytes int     `json:"record_bytes"`
	Acks        string  `json:"acks"`
	// RowsPerBatch is the rows the writers' acknowledged batches carried
	// on average (writes only).
	RowsPerBatch float64 `json:"rows_per_batch,omitempty"`
	TargetRate   float64 `json:"target_rate,omitempty"`
	// Sustained (bench upsert): throughput per interval, first and last
	// window, disk space against live data.
	Sustained *SustainedResult `json:"sustained,omitempty"`
	CPUResult
}

func newBenchResult(mode string, f *Options, records, errs int64, elapsed time.Duration, lat latencyStats, cpu cpuUse) Result {
	secs := max(elapsed.Seconds(), 1e-9)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Result{
		Mode: mode, Records: records, Errors: errs, DurationS: elapsed.Seconds(),
		OpsPerS: float64(records) / secs, MBPerS: float64(records) * float64(f.RecordBytes) / 1e6 / secs,
		P50Ms: ms(lat.p50), P99Ms: ms(lat.p99), P999Ms: ms(lat.p999), MaxMs: ms(lat.max), MeanMs: ms(lat.mean),
		Concurrency: f.Concurrency, RecordBytes: f.RecordBytes, Acks: f.Acks.String(),
		CPUResult: cpu.result(records),
	}
}

// PrintResult writes the result to out as a table headed by title, then
// as one JSON line, for scripts that read either; asJSON: the JSON line
// alone.
func PrintResult(out io.Writer, title string, res Result, asJSON bool) error {
	if asJSON {
		return printJSONLine(out, res)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "records\t%d\n", res.Records)
	fmt.Fprintf(w, "errors\t%d\n", res.Errors)
	if res.Missing > 0 {
		fmt.Fprintf(w, "missing\t%d (acknowledged, not seen by the scanner)\n", res.Missing)
	}
	if res.Misses != nil {
		fmt.Fprintf(w, "misses\t%d (keys not found)\n", *res.Misses)
	}
	fmt.Fprintf(w, "duration\t%.2f s\n", res.DurationS)
	fmt.Fprintf(w, "throughput\t%.0f records/s\t%.2f MB/s\n", res.OpsPerS, res.MBPerS)
	fmt.Fprintf(w, "latency (ms)\tp50 %.3f\tp99 %.3f\tp99.9 %.3f\tmax %.3f\tmean %.3f\n",
		res.P50Ms, res.P99Ms, res.P999Ms, res.MaxMs, res.MeanMs)
	if res.RowsPerBatch > 0 {
		fmt.Fprintf(w, "batches\t%.1f rows each\n", res.RowsPerBatch)
	}
	fmt.Fprintf(w, "cpu (µs/record)\t%s\n", res.cpuLine())
	if s := res.Sustained; s != nil {
		if s.WindowS > 0 {
			fmt.Fprintf(w, "first %.0f s\t%.0f records/s\n", s.WindowS, s.FirstOpsPerS)
			fmt.Fprintf(w, "last %.0f s\t%.0f records/s\t%.2f of the first\n", s.WindowS, s.LastOpsPerS, s.LastToFirst)
		}
		if len(s.KVDirBytes) > 0 {
			fmt.Fprintf(w, "kv folders\t%s\n", formatDirs(s.KVDirBytes))
			fmt.Fprintf(w, "live data\t%.1f MiB\t%d keys\n", float64(s.LiveBytes)/(1<<20), s.LiveKeys)
			fmt.Fprintf(w, "space held\t%.2fx the live data (largest folder)\n", s.SpaceAmp)
		}
	}
	return flushWithJSON(out, w, res)
}

// flushWithJSON ends a benchmark's text report: the table written to w,
// then the result as one JSON line, for scripts that read either.
func flushWithJSON(out io.Writer, w *tabwriter.Writer, res any) error {
	if err := w.Flush(); err != nil {
		return err
	}
	return printJSONLine(out, res)
}

// printJSONLine writes v as one line of JSON.
func printJSONLine(out io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}
