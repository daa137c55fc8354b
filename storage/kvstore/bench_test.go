package kvstore

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/floedb/floe/storage/record"
)

// benchKeys is the store size of the read benchmarks.
const benchKeys = 1_000_000

func benchKey(i int) []byte { return fmt.Appendf(nil, "k%015d", i) }

// loadBenchStore writes benchKeys rows of 16-byte keys and 1 KiB values.
func loadBenchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	pool := make([]byte, 1<<20+1024)
	rand.Read(pool)
	var entries []Change
	for i := range benchKeys {
		off := (i * 4099) % (1 << 20)
		entries = append(entries, Change{Key: benchKey(i), Row: pool[off : off+1024], Kind: record.Insert})
		if len(entries) == 500 {
			if err := s.Apply(entries, int64(i+1)); err != nil {
				b.Fatal(err)
			}
			entries = entries[:0]
		}
	}
	return s
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
		if err != nil || rows[0] == nil {
			b.Fatal(err)
		}
		n += len(keys)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "keys/s")
}
