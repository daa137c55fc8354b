package kvstore

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/floedb/floe/storage/record"
)

// benchKeys is the store size of the read benchmarks.
const benchKeys = 1_000_000

func benchKey(i int) []byte { return fmt.Appendf(nil, "k%015d", i) }

// loadBenchStore writes benchKeys rows of 16-byte keys and 1 KiB values.
func loadBenchStore(b *testing.B) *Store {
	s, _ := loadBenchStoreCfg(b, Config{}, benchKeys)
	return s
}

// loadBenchStoreCfg opens a store with cfg (its Dir is set here) and writes
// keys rows of 16-byte keys and 1 KiB values, applied up to offset keys. It
// also returns the random bytes the rows were cut from, for more rows.
func loadBenchStoreCfg(b *testing.B, cfg Config, keys int) (*Store, []byte) {
	b.Helper()
	cfg.Dir = b.TempDir()
	s := openTestStore(b, cfg)
	pool := make([]byte, 1<<20+1024)
	rand.Read(pool)
	var entries []Change
	for i := range keys {
		off := (i * 4099) % (1 << 20)
		entries = append(entries, Change{Key: benchKey(i), Row: pool[off : off+1024], Kind: record.Insert})
		if len(entries) == 500 || i == keys-1 {
			if err := s.Apply(entries, int64(i+1)); err != nil {
				b.Fatal(err)
			}
			entries = entries[:0]
		}
	}
	return s, pool
}

// BenchmarkGetBatch reads batches of 500 random keys from a store of a
// million 1 KiB rows.
func BenchmarkGetBatch(b *testing.B) {
	s := loadBenchStore(b)
	rng := mrand.New(mrand.NewPCG(1, 2))
	keys := make([][]byte, 500)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i := range keys {
			keys[i] = benchKey(rng.IntN(benchKeys))
		}
		rows, err := s.GetBatch(keys)
		if err != nil || rows[0].Data == nil {
			b.Fatal(err)
		}
		n += len(keys)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkUpdate models one replica's KV work for a batch of 500 upserts
// of random existing keys: the leader's read of the old rows, then the
// Apply every replica does. MEMTABLE sizes the memtable (bytes, env).
func BenchmarkUpdate(b *testing.B) {
	for _, mt := range []int64{2 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("memtable=%dMiB", mt>>20), func(b *testing.B) {
			s, _ := loadBenchStoreCfg(b, Config{MemTableBytes: mt}, benchKeys)
			rng := mrand.New(mrand.NewPCG(1, 2))
			keys := make([][]byte, 500)
			entries := make([]Change, 500)
			next := int64(benchKeys)
			b.ResetTimer()
			n := 0
			for b.Loop() {
				for i := range keys {
					keys[i] = benchKey(rng.IntN(benchKeys))
				}
				rows, err := s.GetBatch(keys)
				if err != nil || rows[0].Data == nil {
					b.Fatal(err)
				}
				for i := range entries {
					entries[i] = Change{Key: keys[i], Row: rows[(i+1)%len(rows)].Data, Kind: record.UpdateAfter}
				}
				next += int64(len(entries))
				if err := s.Apply(entries, next); err != nil {
					b.Fatal(err)
				}
				n += len(keys)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// fullRowCache returns a row cache holding benchKeys 1 KiB rows, and their
// cache keys.
func fullRowCache() (*RowCache, [][]byte) {
	c := NewRowCache(2 << 30)
	row := make([]byte, 1024)
	always := func() bool { return true }
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = cacheKey(nil, 1, benchKey(i))
		c.put(keys[i], row, always)
	}
	return c, keys
}

// BenchmarkRowCacheHit reads random rows of a million 1 KiB rows that all
// sit in the row cache: the cost of a hit (index, key check, copy).
func BenchmarkRowCacheHit(b *testing.B) {
	c, keys := fullRowCache()
	rng := mrand.New(mrand.NewPCG(1, 2))
	var dst []byte
	b.ResetTimer()
	for b.Loop() {
		var ok bool
		if dst, ok = c.appendRow(dst[:0], keys[rng.IntN(benchKeys)]); !ok {
			b.Fatal("miss")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}

// BenchmarkRowCacheHitBatch reads batches of 500 random rows of a million
// 1 KiB rows that all sit in the row cache, key by key (appendRow) and as
// one batch (lookupRows): what grouping by shard and reading in phases
// saves when every read misses the CPU's caches.
func BenchmarkRowCacheHitBatch(b *testing.B) {
	c, keys := fullRowCache()
	batch := make([][]byte, 500)
	b.Run("key-by-key", func(b *testing.B) {
		rng := mrand.New(mrand.NewPCG(1, 2))
		var dst []byte
		for b.Loop() {
			dst = dst[:0]
			for range batch {
				var ok bool
				if dst, ok = c.appendRow(dst, keys[rng.IntN(benchKeys)]); !ok {
					b.Fatal("miss")
				}
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("batch", func(b *testing.B) {
		rng := mrand.New(mrand.NewPCG(1, 2))
		for b.Loop() {
			cb := cacheBatches.Get().(*cacheBatch)
			cb.reset(len(batch))
			for i := range cb.keys {
				cb.keys[i] = keys[rng.IntN(benchKeys)]
			}
			c.lookupRows(cb)
			if cb.spans[0].n == 0 {
				b.Fatal("miss")
			}
			cb.release()
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "keys/s")
	})
}

// BenchmarkUpdateWithGC models one follower replica's steady state under
// random overwrites: Apply of batches of 500 updated rows over a store of
// a third of a million 1 KiB rows (one bucket of three), with the
// value-log collector given one file after every 60 batches, about the
// pace of the node's collector. Run it long enough to reach the steady
// state, where most of the cost is collection: -benchtime 4000x (2M rows).
func BenchmarkUpdateWithGC(b *testing.B) {
	const keys = benchKeys / 3
	s, pool := loadBenchStoreCfg(b, Config{}, keys)
	entries := make([]Change, 500)
	next := int64(keys)
	rng := mrand.New(mrand.NewPCG(1, 2))
	var collecting time.Duration
	files, batches := 0, 0
	start := time.Now()
	for b.Loop() {
		for i := range entries {
			off := rng.IntN(1 << 20)
			entries[i] = Change{Key: benchKey(rng.IntN(keys)), Row: pool[off : off+1024], Kind: record.UpdateAfter}
		}
		next += int64(len(entries))
		if err := s.Apply(entries, next); err != nil {
			b.Fatal(err)
		}
		if batches++; batches%60 == 0 {
			gcStart := time.Now()
			n, err := s.db.CollectGarbage(1, 0)
			if err != nil {
				b.Fatal(err)
			}
			files += n
			collecting += time.Since(gcStart)
		}
	}
	took := time.Since(start)
	b.ReportMetric(float64(batches*len(entries))/took.Seconds(), "rows/s")
	b.ReportMetric(collecting.Seconds()/took.Seconds()*100, "%collecting")
	if files > 0 {
		b.ReportMetric(float64(collecting.Milliseconds())/float64(files), "ms/file")
	}
}
