package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"storj.io/drpc"

	"github.com/floedb/floe/server/tablet"
	"github.com/floedb/floe/transport/pb"
)

// metrics owns a node's Prometheus registry, one per Server (several nodes
// in one test process keep theirs apart), and the series updated as work
// happens: RPC counts and latencies, tiering and KV snapshot counts. The
// rest is read from the node's state when /metrics is scraped
// (nodeCollector, metrics_collect.go). docs/operations.md lists every
// series.
type metrics struct {
	reg *prometheus.Registry
	// rpcs holds each served RPC's series by its DRPC name, resolved when
	// the node is made; read-only after, so lookups take no lock. Names
	// not in it (a caller's typo) share other: the label set stays
	// bounded.
	rpcs  map[string]*rpcSeries
	other *rpcSeries
	// errors are labeled by RPC and error code: resolved on the error
	// path only.
	errors *prometheus.CounterVec

	// tablet are the tablet role's series: tiering and KV snapshots.
	tablet *tablet.Metrics
}

// rpcSeries are one RPC's pre-resolved series.
type rpcSeries struct {
	label    string
	requests prometheus.Counter
	latency  prometheus.Observer
}

// rpcLatencyBuckets span a cached lookup (100 µs) to a long poll or a
// slow commit (30 s), in seconds.
var rpcLatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30}

// newMetrics makes the registry of server s with every collector
// registered.
func newMetrics(s *Server) (*metrics, error) {
	m := &metrics{reg: prometheus.NewRegistry(), rpcs: map[string]*rpcSeries{}}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_rpc_requests_total",
		Help: "RPC calls served, by RPC (a stream counts once; a Tablet.Writes stream's write calls also count as Tablet/Writes/Produce and Tablet/Writes/PutKv)."},
		[]string{"rpc"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "floe_rpc_duration_seconds",
		Help: "Time serving an RPC call, by RPC (a stream: its whole life).", Buckets: rpcLatencyBuckets},
		[]string{"rpc"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_rpc_errors_total",
		Help: "RPC calls that ended with an error, by RPC and wire error code."}, []string{"rpc", "code"})
	series := func(label string) *rpcSeries {
		return &rpcSeries{label: label, requests: requests.WithLabelValues(label), latency: latency.WithLabelValues(label)}
	}
	for _, desc := range []drpc.Description{pb.DRPCMetaDescription{}, pb.DRPCTabletDescription{}} {
		for i := range desc.NumMethods() {
			if rpc, _, _, _, ok := desc.Method(i); ok {
				m.rpcs[rpc] = series(rpcLabel(rpc))
			}
		}
	}
	for _, rpc := range []string{tablet.WritesProduceRPC, tablet.WritesPutKvRPC} {
		m.rpcs[rpc] = series(rpcLabel(rpc))
	}
	m.other = series("other")

	m.tablet = tablet.NewMetrics()

	own := append([]prometheus.Collector{requests, latency, m.errors, &nodeCollector{s: s}, s.sec.authFailures}, m.tablet.Collectors()...)
	for _, c := range own {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Go's runtime and the process's, and hashicorp/raft's and
	// memberlist's own series, under the floe_ prefix.
	prefixed := prometheus.WrapRegistererWithPrefix("floe_", m.reg)
	if err := prefixed.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := prefixed.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	sink, err := libraryMetrics()
	if err != nil {
		return nil, err
	}
	if err := prefixed.Register(sink); err != nil {
		return nil, err
	}
	return m, nil
}

// rpcLabel is an RPC's label: its DRPC name without the package,
// "Tablet/Produce".
func rpcLabel(rpc string) string { return strings.TrimPrefix(rpc, "/floe.v1.") }

// ObserveRPC counts a call and its latency, and its error by code
// (transport.RPCObserver).
func (m *metrics) ObserveRPC(rpc string, elapsed time.Duration, failed bool, code pb.ErrorCode) {
	s := m.rpcs[rpc]
	if s == nil {
		s = m.other
	}
	s.requests.Inc()
	s.latency.Observe(elapsed.Seconds())
	if failed {
		m.errors.WithLabelValues(s.label, codeLabel(code)).Inc()
	}
}

// codeLabel is an error code's label: "NOT_LEADER".
func codeLabel(code pb.ErrorCode) string { return strings.TrimPrefix(code.String(), "ERROR_CODE_") }

// handler serves the registry in Prometheus' text format; a collector's
// error is logged and the rest still served.
func (m *metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError,
		ErrorLog: promErrorLog{log}})
}

// promErrorLog hands promhttp's errors to the node's logger.
type promErrorLog struct{ log *slog.Logger }

func (l promErrorLog) Println(v ...any) {
	l.log.Warn("serving /metrics", "err", strings.TrimSpace(fmt.Sprintln(v...)))
}
