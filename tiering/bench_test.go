package tiering_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/tiering"
)

// benchStores are the stores the benchmarks run against: a folder, and a
// real S3 server when the tests have one (skipped otherwise).
func benchStores(b *testing.B) map[string]func(b *testing.B) tiering.ObjectStore {
	return map[string]func(b *testing.B) tiering.ObjectStore{
		"folder": func(b *testing.B) tiering.ObjectStore {
			f, err := tiering.NewFolder(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return f
		},
		"s3": func(b *testing.B) tiering.ObjectStore {
			s, err := tiering.NewS3(b.Context(), s3server.Bucket(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
}

// acceptAll commits every remote log (one leader, no rivals).
type acceptAll struct{ h tiering.Handle }

func (c *acceptAll) CommitRemoteLog(_ context.Context, _ *tiering.LeaderBucket, expected int64, next tiering.Handle) (tiering.Handle, error) {
	next.Version = expected + 1
	c.h = next
	return next, nil
}

func (c *acceptAll) CutRemoteLog(ctx context.Context, b *tiering.LeaderBucket, expected int64, next tiering.Handle, _ int64) (tiering.Handle, error) {
	return c.CommitRemoteLog(ctx, b, expected, next)
}

// BenchmarkTierRound: one round uploading 64 MiB of sealed 8 MiB segments
// (1 KB records), then every byte read back through the Reader: MB/s up
// and down.
func BenchmarkTierRound(b *testing.B) {
	for _, name := range slices.Sorted(maps.Keys(benchStores(b))) {
		open := benchStores(b)[name]
		b.Run(name, func(b *testing.B) {
			const total = 64 << 20
			l, err := logstore.Open(logstore.Config{Dir: b.TempDir(), SegmentMaxBytes: 8 << 20, Sync: logstore.SyncNever})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			bb := record.NewBatchBuilder(record.BatchOptions{Format: record.PayloadRaw, AppendOnly: true}, 0)
			for range 64 {
				if err := bb.Append(record.AppendOnly, bytes.Repeat([]byte{'r'}, 1000)); err != nil {
					b.Fatal(err)
				}
			}
			batch, err := bb.Build()
			if err != nil {
				b.Fatal(err)
			}
			for l.Size() < total+(8<<20) {
				if _, err := l.Append(bytes.Clone(batch), 1); err != nil {
					b.Fatal(err)
				}
			}
			var up, down float64
			for b.Loop() {
				store := open(b)
				ctl := &acceptAll{}
				rl, err := tiering.NewRemoteLog(tiering.RemoteLogConfig{Store: store, Root: "bench", Commit: ctl, MaxSegmentsPerRound: 1000})
				if err != nil {
					b.Fatal(err)
				}
				round, err := rl.Tier(b.Context(), &tiering.LeaderBucket{TableID: 1, Log: l, LeaderEpoch: 1,
					HighWatermark: l.EndOffset(), ExpireBelow: 1 << 62})
				if err != nil {
					b.Fatal(err)
				}
				up += float64(round.UploadedBytes)
				r, err := tiering.NewReader(tiering.ReaderConfig{Store: store})
				if err != nil {
					b.Fatal(err)
				}
				for off := ctl.h.StartOffset; off < ctl.h.EndOffset; {
					loc, err := r.Locate(b.Context(), ctl.h, off)
					if err != nil {
						b.Fatal(err)
					}
					data, err := r.ReadBatches(b.Context(), loc, 4<<20)
					if err != nil {
						b.Fatal(err)
					}
					down += float64(len(data))
					it := record.NewBatchIterator(data, false)
					for it.Next() {
						off = it.Batch().NextOffset()
					}
				}
			}
			b.ReportMetric(up/1e6/b.Elapsed().Seconds(), "MB/s")
			b.ReportMetric(up/down, "up/down-bytes")
		})
	}
}

// BenchmarkKVSnapshot: a snapshot of 200,000 rows of about 100 bytes, the
// next one after 1% of them changed in one key range (only changed parts
// go up; changes spread over every key range would change every part),
// and a restore: rows/s of each and the bytes the incremental one
// uploaded.
func BenchmarkKVSnapshot(b *testing.B) {
	for _, name := range slices.Sorted(maps.Keys(benchStores(b))) {
		open := benchStores(b)[name]
		b.Run(name, func(b *testing.B) {
			const n = 200_000
			keys := make([][]byte, n)
			rows := make([][]byte, n)
			for i := range n {
				keys[i] = fmt.Appendf(nil, "key-%09d", i)
				rows[i] = fmt.Appendf(nil, "%090d", i)
			}
			src := func(fn func(key []byte, schemaID int16, row []byte) error) (int64, error) {
				for i := range n {
					if err := fn(keys[i], 1, rows[i]); err != nil {
						return 0, err
					}
				}
				return n, nil
			}
			var fullSecs, incSecs, restoreSecs, incBytes, fullBytes float64
			for b.Loop() {
				cfg := tiering.KVSnapshotConfig{Store: open(b), Root: "bench", TableID: 1, TempDir: b.TempDir()}
				start := b.Elapsed()
				full, err := tiering.TakeKVSnapshot(b.Context(), cfg, 1, nil, src)
				if err != nil {
					b.Fatal(err)
				}
				fullSecs += (b.Elapsed() - start).Seconds()
				fullBytes += float64(full.UploadedBytes)
				for i := range n / 100 { // 1% of the rows, one key range
					rows[i] = fmt.Appendf(nil, "%090d", i+1)
				}
				start = b.Elapsed()
				inc, err := tiering.TakeKVSnapshot(b.Context(), cfg, 1, []string{full.ManifestKey}, src)
				if err != nil {
					b.Fatal(err)
				}
				incSecs += (b.Elapsed() - start).Seconds()
				incBytes += float64(inc.UploadedBytes)
				start = b.Elapsed()
				if _, err := tiering.RestoreKVSnapshot(b.Context(), cfg.Store, inc.ManifestKey, discard{}); err != nil {
					b.Fatal(err)
				}
				restoreSecs += (b.Elapsed() - start).Seconds()
			}
			b.ReportMetric(float64(b.N*n)/fullSecs, "full-rows/s")
			b.ReportMetric(float64(b.N*n)/incSecs, "incremental-rows/s")
			b.ReportMetric(incBytes/fullBytes, "incremental/full-bytes")
			b.ReportMetric(float64(b.N*n)/restoreSecs, "restore-rows/s")
		})
	}
}

type discard struct{}

func (discard) Put([]byte, int16, []byte) error { return nil }
