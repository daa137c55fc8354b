package tablet

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the series the tablet role updates as it works: tiering
// rounds and KV snapshots. The node registers them (Collectors) with the
// rest of its registry; docs/operations.md lists every series.
type Metrics struct {
	TieringSegments     prometheus.Counter
	TieringBytes        prometheus.Counter
	TieringRoundErrors  prometheus.Counter
	KVSnapshots         prometheus.Counter
	KVSnapshotErrors    prometheus.Counter
	KVSnapshotBytes     prometheus.Counter
	KVSnapshotDurations prometheus.Histogram
}

// NewMetrics makes the tablet role's series, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		TieringSegments: newCounter("floe_tiering_uploaded_segments_total",
			"Sealed log segments this node's leaders uploaded to remote storage."),
		TieringBytes: newCounter("floe_tiering_uploaded_bytes_total",
			"Bytes of sealed log segments this node's leaders uploaded to remote storage."),
		TieringRoundErrors: newCounter("floe_tiering_errors_total",
			"Tiering rounds of a bucket that failed (retried the next round)."),
		KVSnapshots: newCounter("floe_kv_snapshots_total",
			"KV snapshots this node's primary-key leaders took and committed."),
		KVSnapshotErrors: newCounter("floe_kv_snapshot_errors_total",
			"KV snapshots that failed to be taken or committed."),
		KVSnapshotBytes: newCounter("floe_kv_snapshot_uploaded_bytes_total",
			"Bytes KV snapshots uploaded (parts an earlier snapshot stored are reused, not counted)."),
		KVSnapshotDurations: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_kv_snapshot_duration_seconds",
			Help: "Time taking and committing a KV snapshot.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}),
	}
}

// Collectors lists the series, to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.TieringSegments, m.TieringBytes, m.TieringRoundErrors,
		m.KVSnapshots, m.KVSnapshotErrors, m.KVSnapshotBytes, m.KVSnapshotDurations}
}

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}
