package server

import (
	"sync"

	gometrics "github.com/hashicorp/go-metrics"
	gometricsprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// hashicorp/raft and memberlist report their own metrics (raft's commit
// time, elections, replication RPCs; memberlist's probes and gossip)
// through hashicorp/go-metrics, to the one sink that package keeps for the
// whole process. libraryMetrics points that sink, once per process, at a
// Prometheus collector, which every node's registry serves under the
// floe_ prefix: floe_raft_*, floe_memberlist_*. In a process running
// several nodes (tests) those series are the nodes' together; floe serve
// runs one. The node's own Raft gauges (floe_meta_*) are per node.
var library struct {
	once sync.Once
	sink *gometricsprom.PrometheusSink
	err  error
}

func libraryMetrics() (prometheus.Collector, error) {
	library.once.Do(func() {
		// The sink registers itself: on a registry of its own, not
		// Prometheus' global one; each node registers it again on its own.
		// Expiration 0 keeps every series: raft and memberlist name a
		// bounded set (labels are peer ids at most), and a counter must not
		// vanish between two increments.
		sink, err := gometricsprom.NewPrometheusSinkFrom(gometricsprom.PrometheusOpts{
			Registerer: prometheus.NewRegistry(), Expiration: 0, Name: "floe_library_metrics_sink"})
		if err != nil {
			library.err = err
			return
		}
		cfg := gometrics.DefaultConfig("")
		cfg.EnableHostname = false
		cfg.EnableRuntimeMetrics = false // the Go collector has them
		if _, err := gometrics.NewGlobal(cfg, sink); err != nil {
			library.err = err
			return
		}
		library.sink = sink
	})
	return library.sink, library.err
}
