package integration

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/storage/record"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

var kvFailoverKeys = flag.Int("floe.kv-keys", 1_000_000, "keys BenchmarkKVFailover loads before it kills leaders")

// benchKVSchema is 16-byte keys and 1 KiB values.
const benchKVSchema = "id STRING NOT NULL, v BYTES"

func benchKVKey(i int) string { return fmt.Sprintf("key-%012d", i) }

// BenchmarkKVFailover loads -floe.kv-keys keys (16-byte keys, 1 KiB values)
// into one bucket, then SIGKILLs its leader three times and measures the
// time from the kill to the first successful lookup on the new leader.
func BenchmarkKVFailover(b *testing.B) {
	c := StartCluster(b, 3, ClusterOptions{})
	ctx := context.Background()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "fo"); err != nil {
		b.Fatal(err)
	}
	info, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "fo", Name: "kv", Schema: benchKVSchema,
		PrimaryKey: []string{"id"}, Buckets: 1, Replication: 3})
	if err != nil {
		b.Fatal(err)
	}
	s, err := record.ParseSchema(benchKVSchema)
	if err != nil {
		b.Fatal(err)
	}
	s.PrimaryKey = []string{"id"}
	keySchema, _ := record.ParseSchema("id STRING NOT NULL")
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()

	// Load.
	n := *kvFailoverKeys
	const loaders, perBatch = 8, 256
	var next atomic.Int64
	var wg sync.WaitGroup
	var loadErr atomic.Pointer[error]
	value := make([]byte, 1024)
	loadStart := time.Now()
	for w := range loaders {
		wg.Go(func() {
			caller := &kvCaller{t: b, c: c, pool: pool, tableID: info.ID, next: w}
			enc, _ := record.NewRowEncoder(s)
			seq := int32(0)
			for {
				first := int(next.Add(perBatch)) - perBatch
				if first >= n {
					return
				}
				bld := record.NewBatchBuilder(record.BatchOptions{SchemaID: 1, Format: record.PayloadRows, HasWriter: true, WriterID: int64(100 + w), Sequence: seq}, 0)
				for i := first; i < min(first+perBatch, n); i++ {
					enc.Reset()
					enc.SetString(0, benchKVKey(i))
					enc.SetBytes(1, value)
					row, err := enc.Finish(nil)
					if err != nil {
						panic(err)
					}
					if err := bld.Append(record.UpdateAfter, row); err != nil {
						panic(err)
					}
				}
				batch, _ := bld.Build()
				seq++
				if err := caller.do(ctx, time.Minute, func(ctx context.Context, tablet pb.DRPCTabletClient) error {
					_, err := tablet.PutKv(ctx, &pb.PutKvRequest{TableId: info.ID, Acks: -1, Batch: batch})
					return err
				}); err != nil {
					loadErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := loadErr.Load(); p != nil {
		b.Fatal(*p)
	}
	loadTime := time.Since(loadStart)
	b.Logf("loaded %d keys in %v: %.0f upserts/s", n, loadTime.Round(time.Millisecond), float64(n)/loadTime.Seconds())

	keyEnc, _ := record.NewRowEncoder(keySchema)
	lookup := func(ctx context.Context, addr string, i int) error {
		keyEnc.Reset()
		keyEnc.SetString(0, benchKVKey(i))
		key, _ := keyEnc.Finish(nil)
		resp, err := pb.NewDRPCTabletClient(pool.Conn(addr)).Lookup(ctx, &pb.LookupRequest{TableId: info.ID, Keys: [][]byte{key}})
		if err != nil {
			return err
		}
		if len(unpackRows(resp)[0]) == 0 {
			return fmt.Errorf("key %d missing", i)
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var times []time.Duration
	for b.Loop() {
		for range 3 {
			desc, err := cl.Admin().DescribeTable(ctx, "fo", "kv")
			if err != nil {
				b.Fatal(err)
			}
			nd := c.Nodes[desc.Placement[0].Leader-1]
			c.Kill(nd)
			start := time.Now()
			for served := false; !served; {
				if time.Since(start) > time.Minute {
					b.Fatal("no lookup served within a minute of the kill")
				}
				for _, other := range c.Nodes {
					if other == nd {
						continue
					}
					actx, cancel := context.WithTimeout(ctx, time.Second)
					err := lookup(actx, other.Addr, rng.IntN(n))
					cancel()
					if err == nil {
						served = true
						break
					}
				}
				if !served {
					time.Sleep(5 * time.Millisecond)
				}
			}
			times = append(times, time.Since(start))
			c.Restart(nd)
			waitISRFullB(b, ctx, cl, "fo", "kv")
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(n)/loadTime.Seconds(), "load_upserts/s")
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "median_ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max_ms")
	b.Logf("lookup-again times after SIGKILL with %d keys: %v", n, times)
}
