package logstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkDurableMark measures what the durable mark costs on the append
// path: the same fsynced appends of one 1 KiB record, from one writer (an
// fsync each) and from 32 (fsyncs grouped), with the mark written after
// each fsync that moves it and with it switched off. mark_us is the mark's
// own open, write and close, timed alone in the same folder.
func BenchmarkDurableMark(b *testing.B) {
	for _, writers := range []int{1, benchAppenders} {
		for _, on := range []bool{true, false} {
			b.Run(fmt.Sprintf("writers=%d/mark=%v", writers, on), func(b *testing.B) {
				benchDurableMark(b, writers, on)
			})
		}
	}
	b.Run("set", func(b *testing.B) {
		m, _, err := openDurableMark(b.TempDir(), newMarkFiles(openMarkFiles))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if err := m.set(int64(i + 1)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "mark_us")
	})
}

func benchDurableMark(b *testing.B, writers int, on bool) {
	l, err := Open(Config{Dir: filepath.Join(b.TempDir(), "log"), Sync: SyncAlways})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if !on {
		l.syncMu.Lock()
		l.mark = nil
		l.syncMu.Unlock()
	}
	batch := makeBatch(b, "m", 1, benchRecordBytes)
	b.ResetTimer()
	start := time.Now()
	runOn(writers, b.N, func(int) error {
		_, err := l.Append(batch, 0)
		return err
	})
	elapsed := time.Since(start)
	b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "us/append")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
}
