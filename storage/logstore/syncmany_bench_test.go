package logstore

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkSyncMany measures how a node should make many buckets' writes
// durable together: every round writes a 16 KiB batch to each of n logs,
// then makes all of them durable. It compares, through the log's own
// AppendReplicatedPending (what a follower does with one fetch's buckets),
// waiting for each in turn with waiting for up to k at once; and, on plain
// files, the same orders of fdatasync plus sync_file_range(WRITE) on every
// file before the fdatasyncs, and one syncfs. It reports rounds/s and
// fsyncs/s (logs made durable per second).
//
//	go test -run '^$' -bench SyncMany ./storage/logstore
func BenchmarkSyncMany(b *testing.B) {
	for _, n := range []int{8, 128} {
		for _, k := range []int{1, 4, 16, 64} {
			if k > n {
				continue
			}
			b.Run(fmt.Sprintf("logs=%d/concurrent=%d", n, k), func(b *testing.B) { benchSyncLogs(b, n, k) })
		}
		b.Run(fmt.Sprintf("files=%d/fdatasync-serial", n), func(b *testing.B) {
			benchSyncFiles(b, n, func(fds []int) { fdatasyncAll(fds, 1) })
		})
		b.Run(fmt.Sprintf("files=%d/fdatasync-16", n), func(b *testing.B) {
			benchSyncFiles(b, n, func(fds []int) { fdatasyncAll(fds, 16) })
		})
		b.Run(fmt.Sprintf("files=%d/sfr-then-fdatasync-16", n), func(b *testing.B) {
			benchSyncFiles(b, n, func(fds []int) {
				for _, fd := range fds {
					_ = unix.SyncFileRange(fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE)
				}
				fdatasyncAll(fds, 16)
			})
		})
		b.Run(fmt.Sprintf("files=%d/syncfs", n), func(b *testing.B) {
			benchSyncFiles(b, n, func(fds []int) { _ = unix.Syncfs(fds[0]) })
		})
	}
}

func benchSyncLogs(b *testing.B, n, k int) {
	sched, err := NewScheduler(SchedulerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer sched.Close()
	dir := b.TempDir()
	logs := make([]*Log, n)
	for i := range logs {
		l, err := Open(Config{Dir: filepath.Join(dir, fmt.Sprint(i)), Scheduler: sched})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	batch := makeBatch(b, "s", benchRecords, benchRecordBytes)
	next := make([]int64, n)
	waits := make([]func() error, n)
	b.SetBytes(int64(n * len(batch)))
	for b.Loop() {
		for i, l := range logs {
			batch.SetBaseOffset(next[i])
			info, wait, err := l.AppendReplicatedPending(batch)
			if err != nil {
				b.Fatal(err)
			}
			next[i] = info.LastOffset + 1
			waits[i] = wait
		}
		var wg sync.WaitGroup
		slots := make(chan struct{}, k)
		for _, wait := range waits {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if err := wait(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rounds/s")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "fsyncs/s")
}

func benchSyncFiles(b *testing.B, n int, syncAll func(fds []int)) {
	dir := b.TempDir()
	fds := make([]int, n)
	for i := range fds {
		f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := unix.Fallocate(int(f.Fd()), 0, 0, 64<<20); err != nil {
			b.Fatal(err)
		}
		fds[i] = int(f.Fd())
	}
	buf := make([]byte, benchRecords*benchRecordBytes)
	var off int64
	b.SetBytes(int64(n * len(buf)))
	for b.Loop() {
		for _, fd := range fds {
			if _, err := unix.Pwrite(fd, buf, off); err != nil {
				b.Fatal(err)
			}
		}
		off = (off + int64(len(buf))) % (64 << 20)
		syncAll(fds)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rounds/s")
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "fsyncs/s")
}

func fdatasyncAll(fds []int, k int) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, k)
	for _, fd := range fds {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			_ = unix.Fdatasync(fd)
		})
	}
	wg.Wait()
}
