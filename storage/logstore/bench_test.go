package logstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
	"golang.org/x/sys/unix"
)

// Benchmark shape from the issue: 32 appenders, 16 KiB batches of 1 KiB records.
const (
	benchAppenders   = 32
	benchRecordBytes = 1024
	benchRecords     = 16
)

// BenchmarkAppend measures appends and, in the same run and folder, plain
// write(2) (+ fdatasync for sync=always) of the same bytes, reporting MB/s and
// raw_ratio = Floe MB/s ÷ raw MB/s. For sync=always the raw baseline groups
// fsyncs the way a careful hand-written WAL would (raw_ratio), and
// x_fsync_per_append compares with one writer fsyncing every append.
func BenchmarkAppend(b *testing.B) {
	for _, p := range []SyncPolicy{SyncNever, SyncAlways} {
		b.Run("sync="+p.String(), func(b *testing.B) { benchAppend(b, p) })
	}
}

func benchAppend(b *testing.B, p SyncPolicy) {
	dir := b.TempDir()
	l, err := Open(Config{Dir: filepath.Join(dir, "log"), Sync: p})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batches := make([]record.Batch, benchAppenders)
	for i := range batches {
		batches[i] = makeBatch(b, fmt.Sprint(i), benchRecords, benchRecordBytes)
	}
	batchBytes := len(batches[0])
	b.SetBytes(int64(batchBytes))
	b.ResetTimer()
	start := time.Now()
	runConcurrently(b.N, func(w int) error {
		_, err := l.Append(batches[w], 0)
		return err
	})
	elapsed := time.Since(start)
	b.StopTimer()

	floeMBps := mbps(b.N*batchBytes, elapsed)
	b.ReportMetric(floeMBps, "MB/s")
	b.ReportMetric(float64(b.N*benchRecords)/elapsed.Seconds(), "records/s")

	raw := newRawFile(b, filepath.Join(dir, "raw"))
	defer raw.close()
	data := []byte(batches[0])
	switch p {
	case SyncNever:
		rawElapsed := raw.run(b.N, data, false)
		b.ReportMetric(floeMBps/mbps(b.N*batchBytes, rawElapsed), "raw_ratio")
	case SyncAlways:
		grouped := raw.run(b.N, data, true)
		b.ReportMetric(floeMBps/mbps(b.N*batchBytes, grouped), "raw_ratio")
		// One fsync per append: a single writer, bounded so slow disks stay quick.
		n := min(b.N, 2000)
		perAppend := raw.sequentialSync(n, data)
		perAppendRate := float64(n) / perAppend.Seconds()
		b.ReportMetric(float64(b.N)/elapsed.Seconds()/perAppendRate, "x_fsync_per_append")
		// And 32 writers that each fsync their own append, ungrouped.
		ungrouped := raw.concurrentSync(n, data)
		b.ReportMetric(float64(b.N)/elapsed.Seconds()/(float64(n)/ungrouped.Seconds()), "x_ungrouped_fsync")
	}
}

// runConcurrently spreads n operations over benchAppenders goroutines.
func runConcurrently(n int, op func(worker int) error) { runOn(benchAppenders, n, op) }

// runOn spreads n operations over workers goroutines.
func runOn(workers, n int, op func(worker int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := op(w); err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
}

func mbps(bytes int, d time.Duration) float64 { return float64(bytes) / 1e6 / d.Seconds() }

// rawFile is the baseline: plain writes to a file, no format, no index.
type rawFile struct {
	f      *os.File
	mu     sync.Mutex
	off    int64
	synced int64 // group commit state of the grouped baseline
	sync   sync.Mutex
}

func newRawFile(b *testing.B, path string) *rawFile {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	return &rawFile{f: f}
}

func (r *rawFile) close() { r.f.Close() }

func (r *rawFile) reset() {
	r.f.Truncate(0)
	r.off, r.synced = 0, 0
}

func (r *rawFile) write(data []byte) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.WriteAt(data, r.off); err != nil {
		panic(err)
	}
	r.off += int64(len(data))
	return r.off
}

// run writes n copies from 32 goroutines; with grouped, each waits for an
// fdatasync covering its write, and one fdatasync covers all writes before it.
func (r *rawFile) run(n int, data []byte, grouped bool) time.Duration {
	r.reset()
	start := time.Now()
	runConcurrently(n, func(int) error {
		end := r.write(data)
		if !grouped {
			return nil
		}
		r.sync.Lock()
		defer r.sync.Unlock()
		if r.synced >= end {
			return nil
		}
		r.mu.Lock()
		target := r.off
		r.mu.Unlock()
		if err := unix.Fdatasync(int(r.f.Fd())); err != nil {
			return err
		}
		r.synced = target
		return nil
	})
	return time.Since(start)
}

// sequentialSync is one writer doing write + fdatasync per append.
func (r *rawFile) sequentialSync(n int, data []byte) time.Duration {
	r.reset()
	start := time.Now()
	for range n {
		r.write(data)
		if err := unix.Fdatasync(int(r.f.Fd())); err != nil {
			panic(err)
		}
	}
	return time.Since(start)
}

// concurrentSync is 32 writers each doing write + its own fdatasync.
func (r *rawFile) concurrentSync(n int, data []byte) time.Duration {
	r.reset()
	start := time.Now()
	runConcurrently(n, func(int) error {
		r.write(data)
		return unix.Fdatasync(int(r.f.Fd()))
	})
	return time.Since(start)
}

// benchLog fills a log with about size bytes of 16 KiB batches.
func benchLog(b *testing.B, size int64) (*Log, []int64) {
	l, err := Open(Config{Dir: b.TempDir(), Sync: SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	batch := makeBatch(b, "r", benchRecords, benchRecordBytes)
	var bases []int64
	for written := int64(0); written < size; written += int64(len(batch)) {
		info, err := l.Append(batch, 0)
		if err != nil {
			b.Fatal(err)
		}
		bases = append(bases, info.BaseOffset)
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	return l, bases
}

// BenchmarkRead reads the whole log sequentially, 1 MiB per read, verifying
// every batch's CRC as reads do by default.
func BenchmarkRead(b *testing.B) {
	l, _ := benchLog(b, 256<<20)
	b.SetBytes(l.Size())
	b.ResetTimer()
	for b.Loop() {
		for from := l.StartOffset(); from < l.EndOffset(); {
			recs, err := l.Read(from, 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			from = recs.NextOffset
			recs.Release()
		}
	}
	b.ReportMetric(float64(l.Size())*float64(b.N)/1e6/b.Elapsed().Seconds(), "MB/s")
}

// BenchmarkReadRandom reads one batch at a random offset per operation.
func BenchmarkReadRandom(b *testing.B) {
	l, bases := benchLog(b, 256<<20)
	end := l.EndOffset()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for b.Loop() {
		recs, err := l.Read(rng.Int64N(end), 16<<10)
		if err != nil || len(recs.Data) == 0 {
			b.Fatal(err)
		}
		recs.Release()
	}
	_ = bases
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}

// BenchmarkRecovery opens a 1 GiB log after a crash: a torn batch at the end
// and the recovery point 64 MiB behind it (a second of writes at this disk's
// speed). Only the tail past the recovery point is checksummed.
func BenchmarkRecovery(b *testing.B) {
	dir := b.TempDir()
	cfg := Config{Dir: dir, Sync: SyncNever, RecoveryPointInterval: time.Hour, SegmentMaxBytes: maxSegmentBytes}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := makeBatch(b, "r", benchRecords, benchRecordBytes)
	const total, lag = 1 << 30, 64 << 20
	for l.active.size < total {
		if l.active.size >= total-lag && l.checkpointed.offset == 0 {
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := l.writeRecoveryPoint(); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	end, size := l.EndOffset(), l.active.size
	l.crash()
	rp, err := os.ReadFile(filepath.Join(dir, recoveryPointFile))
	if err != nil {
		b.Fatal(err)
	}
	torn := []byte(makeBatch(b, "torn", benchRecords, benchRecordBytes))[:9000]
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		f, err := os.OpenFile(segmentFile(dir, 0), os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(torn, size); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.WriteFile(filepath.Join(dir, recoveryPointFile), rp, 0o644); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		l, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if l.EndOffset() != end {
			b.Fatalf("recovered to %d, want %d", l.EndOffset(), end)
		}
		l.crash()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/recovery")
}
