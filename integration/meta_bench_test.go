package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkMetaFailover kills the metadata leader (SIGKILL) 10 times and
// measures the time until a new leader accepts DDL: a client retries a
// database create against the surviving nodes from the moment of the kill.
// Reports the median and the maximum over the kills.
//
//	go test -run '^$' -bench MetaFailover -benchtime 1x ./integration
func BenchmarkMetaFailover(b *testing.B) {
	c := StartCluster(b, 3, ClusterOptions{})
	ctx := context.Background()
	cl := c.Client(ctx)
	var times []time.Duration
	for b.Loop() {
		for kill := range 10 {
			leader := c.WaitLeader(30 * time.Second)
			if err := cl.Admin().CreateDatabase(ctx, fmt.Sprintf("warm%d_%d", len(times), kill)); err != nil {
				b.Fatal(err)
			}
			c.Kill(leader)
			start := time.Now()
			opCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := cl.Admin().CreateDatabase(opCtx, fmt.Sprintf("failover%d_%d", len(times), kill))
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
			c.Restart(leader)
			waitFor(b, 30*time.Second, "the restarted node to rejoin", func() bool {
				st, err := cl.Admin().ClusterStatus(ctx)
				if err != nil {
					return false
				}
				for _, v := range st.Voters {
					if v.State == "unreachable" || v.State == "candidate" {
						return false
					}
				}
				return true
			})
		}
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "median_ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max_ms")
	b.Logf("failover times: %v", times)
}

// BenchmarkTableCreate measures `table create` latency on a healthy 3-voter
// cluster through the SDK (the CLI adds a process start).
//
//	go test -run '^$' -bench TableCreate ./integration
func BenchmarkTableCreate(b *testing.B) {
	c := StartCluster(b, 3, ClusterOptions{})
	ctx := context.Background()
	cl := c.Client(ctx)
	if err := cl.Admin().CreateDatabase(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		_, err := cl.Admin().CreateTable(ctx, tableSpec("bench", fmt.Sprintf("t%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}
