package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/client"
)

// BenchmarkLogFailover measures, over 5 SIGKILLs of a one-bucket table's
// leader, the time from the kill until an acks=all write succeeds again
// (the writer retries from the moment of the kill).
//
//	go test -run '^$' -bench LogFailover -benchtime 1x ./integration
func BenchmarkLogFailover(b *testing.B) {
	c := StartCluster(b, 3, ClusterOptions{})
	ctx := context.Background()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "fo"); err != nil {
		b.Fatal(err)
	}
	if _, err := cl.Admin().CreateTable(ctx, client.TableSpec{Database: "fo", Name: "t", Schema: logTableSchema, Buckets: 1, Replication: 3}); err != nil {
		b.Fatal(err)
	}
	tbl, err := cl.Table(ctx, "fo", "t")
	if err != nil {
		b.Fatal(err)
	}
	w, err := tbl.NewAppendWriter(client.AppendWriterOptions{Linger: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	write := func(id int64) error {
		f, err := w.Append(ctx, encodeRow(b, tbl, id, "x"))
		if err != nil {
			return err
		}
		_, err = f.Wait(ctx)
		return err
	}
	var times []time.Duration
	id := int64(0)
	for b.Loop() {
		for range 5 {
			for range 50 {
				if err := write(id); err != nil {
					b.Fatal(err)
				}
				id++
			}
			desc, err := cl.Admin().DescribeTable(ctx, "fo", "t")
			if err != nil {
				b.Fatal(err)
			}
			nd := c.Nodes[desc.Placement[0].Leader-1]
			c.Kill(nd)
			start := time.Now()
			if err := write(id); err != nil {
				b.Fatal(err)
			}
			id++
			times = append(times, time.Since(start))
			c.Restart(nd)
			waitISRFullB(b, ctx, cl, "fo", "t")
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "median_ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max_ms")
	b.Logf("write-again times after SIGKILL: %v", times)
}

func waitISRFullB(b *testing.B, ctx context.Context, cl *client.Client, db, name string) {
	waitFor(b, 60*time.Second, "every replica back in the ISR", func() bool {
		desc, err := cl.Admin().DescribeTable(ctx, db, name)
		if err != nil {
			return false
		}
		for _, p := range desc.Placement {
			if len(p.ISR) != len(p.Replicas) || p.Leader == 0 {
				return false
			}
		}
		return true
	})
}
