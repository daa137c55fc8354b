package logstore

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// TestConcurrentAppendRead: several appenders and tailing readers at once
// (run under -race). Every reader sees a gap-free sequence of valid batches,
// and every acknowledged append is in the log exactly once.
func TestConcurrentAppendRead(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			l := openLog(t, Config{Dir: t.TempDir(), Sync: p, SegmentMaxBytes: 256 << 10,
				RetentionBytes: 0, IndexIntervalBytes: 1024})
			const writers, perWriter = 4, 150
			var wg sync.WaitGroup
			var done atomic.Bool
			acked := make([][]int64, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						info, err := l.Append(makeBatch(t, fmt.Sprintf("w%d-%d", w, i), 1+i%3, 200), 0)
						if err != nil {
							t.Error(err)
							return
						}
						acked[w] = append(acked[w], info.BaseOffset)
					}
				}()
			}
			readerErrs := make(chan error, 3)
			var rwg sync.WaitGroup
			for range 3 {
				rwg.Add(1)
				go func() {
					defer rwg.Done()
					readerErrs <- tail(l, &done)
				}()
			}
			wg.Wait()
			done.Store(true)
			rwg.Wait()
			close(readerErrs)
			for err := range readerErrs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// Every acknowledged batch is there, once, with its own data.
			seen := map[int64]bool{}
			batches, err := readAll(t, l, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				seen[b.BaseOffset()] = true
			}
			for w := range writers {
				if len(acked[w]) != perWriter {
					t.Fatalf("writer %d acked %d", w, len(acked[w]))
				}
				for _, off := range acked[w] {
					if !seen[off] {
						t.Fatalf("acked batch at %d missing", off)
					}
				}
			}
			if len(batches) != writers*perWriter {
				t.Fatalf("%d batches, want %d", len(batches), writers*perWriter)
			}
		})
	}
}

// tail follows the log until done, checking continuity and CRCs.
func tail(l *Log, done *atomic.Bool) error {
	var next int64
	for {
		finished := done.Load()
		recs, err := l.Read(next, 64<<10)
		if err != nil {
			return err
		}
		it := record.NewBatchIterator(recs.Data, true)
		for it.Next() {
			b := it.Batch()
			if b.BaseOffset() != next {
				recs.Release()
				return fmt.Errorf("reader expected offset %d, got %d", next, b.BaseOffset())
			}
			rit, _, err := b.Records(nil, nil)
			if err != nil {
				recs.Release()
				return err
			}
			for rit.Next() {
				if !bytes.Contains(rit.Record().Data, []byte("/")) {
					recs.Release()
					return fmt.Errorf("record %d has foreign data", rit.Record().Offset)
				}
			}
			next = b.NextOffset()
		}
		recs.Release()
		if it.Err() != nil {
			return it.Err()
		}
		if finished && next == l.EndOffset() {
			return nil
		}
	}
}
