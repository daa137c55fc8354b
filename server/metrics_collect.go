package server

import (
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floedb/floe/internal/diskusage"
	"github.com/floedb/floe/raftmeta/metastate"
)

// nodeCollector computes, at scrape time, the series that the node's
// state already holds: per-table traffic counters and replica gauges, the
// replica events, the metadata Raft's indexes, offline buckets (on the
// metadata leader) and disk use. Nothing on a request's path updates them.
type nodeCollector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	tableBytesIn    = desc("floe_table_bytes_in_total", "Bytes of batches written to the table through this node's leaders (appends and upserts, as sent).", "table")
	tableRecordsIn  = desc("floe_table_records_in_total", "Records written to the table through this node's leaders.", "table")
	tableBytesOut   = desc("floe_table_bytes_out_total", "Bytes of the table served to readers by this node: consumer fetches, lookups, prefix lookups, row scans.", "table")
	tableRecordsOut = desc("floe_table_records_out_total", "Records and rows of the table served to readers by this node.", "table")

	bucketLeaders          = desc("floe_bucket_leaders", "Buckets of the table this node leads.", "table")
	bucketFollowers        = desc("floe_bucket_followers", "Buckets of the table this node follows.", "table")
	bucketsUnderReplicated = desc("floe_buckets_under_replicated", "Buckets led by this node whose ISR is smaller than their replica set.", "table")
	bucketsBelowMinISR     = desc("floe_buckets_below_min_isr", "Buckets led by this node whose ISR is below min.insync.replicas (acks=all writes refused).", "table")
	bucketsOffline         = desc("floe_buckets_offline", "Buckets with no leader, as the metadata says (reported by the metadata leader only).", "table")
	followerLag            = desc("floe_follower_lag_records", "The largest lag, in records, of a follower behind a bucket of the table this node leads.", "table")
	tieringLag             = desc("floe_tiering_lag_records", "Records below the high watermarks of buckets this node leads that are not in remote storage yet.", "table")
	kvSnapshotAge          = desc("floe_kv_snapshot_age_seconds", "Age of the oldest newest-KV-snapshot among the primary-key buckets this node leads.", "table")
	kvNoSnapshot           = desc("floe_kv_buckets_without_snapshot", "Primary-key buckets this node leads that have no KV snapshot yet.", "table")
	logBytes               = desc("floe_log_bytes", "Bytes of the table's local log segments on this node.", "table")

	isrShrinks      = desc("floe_isr_shrinks_total", "ISR shrinks of buckets led by this node.")
	isrExpands      = desc("floe_isr_expands_total", "ISR expansions of buckets led by this node.")
	leaderElections = desc("floe_bucket_leader_elections_total", "Bucket leaderships this node took (a new leader epoch began here); summed over nodes: the cluster's leader changes.")
	moveBytes       = desc("floe_move_bytes_total", "Bytes the replicas moves added to this node copied while they caught up (from their leaders and remote storage; KV snapshot restores not included).")

	metaTerm         = desc("floe_meta_term", "The metadata Raft's current term on this node.")
	metaCommitIndex  = desc("floe_meta_commit_index", "The metadata Raft's commit index on this node.")
	metaAppliedIndex = desc("floe_meta_applied_index", "The metadata index this node's state machine applied.")
	metaLastIndex    = desc("floe_meta_last_log_index", "The last index in this node's metadata Raft log.")
	metaLeader       = desc("floe_meta_leader", "1 when this node is the metadata Raft leader.")

	diskBytes = desc("floe_disk_bytes", "Disk used by this node, by part: logs (bucket log segments), kv (Badger), meta (Raft log, snapshots and state).", "part")
)

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tableBytesIn, tableRecordsIn, tableBytesOut, tableRecordsOut,
		bucketLeaders, bucketFollowers, bucketsUnderReplicated, bucketsBelowMinISR, bucketsOffline, followerLag,
		tieringLag, kvSnapshotAge, kvNoSnapshot, logBytes, isrShrinks, isrExpands, leaderElections, moveBytes,
		metaTerm, metaCommitIndex, metaAppliedIndex, metaLastIndex, metaLeader, diskBytes} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectReplicas(ch)
	c.collectMeta(ch)
	c.collectDisk(ch)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v int64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

// collectReplicas reports the tablet role's tables and events.
func (c *nodeCollector) collectReplicas(ch chan<- prometheus.Metric) {
	s := c.s
	if s.tablet == nil {
		return
	}
	replicas := s.tablet.Replicas()
	if replicas == nil {
		return
	}
	var logs int64
	tiered := s.cfg.Remote != nil
	for _, g := range replicas.TableGauges(time.Now()) {
		t := g.Name
		counter(ch, tableBytesIn, g.Traffic.BytesIn.Load(), t)
		counter(ch, tableRecordsIn, g.Traffic.RecordsIn.Load(), t)
		counter(ch, tableBytesOut, g.Traffic.BytesOut.Load(), t)
		counter(ch, tableRecordsOut, g.Traffic.RecordsOut.Load(), t)
		gauge(ch, bucketLeaders, float64(g.Leaders), t)
		gauge(ch, bucketFollowers, float64(g.Followers), t)
		gauge(ch, bucketsUnderReplicated, float64(g.UnderReplicated), t)
		gauge(ch, bucketsBelowMinISR, float64(g.BelowMinISR), t)
		gauge(ch, followerLag, float64(g.MaxFollowerLagRecords), t)
		gauge(ch, logBytes, float64(g.LogBytes), t)
		logs += g.LogBytes
		if tiered {
			gauge(ch, tieringLag, float64(g.TieringLagRecords), t)
			gauge(ch, kvNoSnapshot, float64(g.BucketsWithoutKVSnapshot), t)
		}
		if g.HasKVSnapshot {
			gauge(ch, kvSnapshotAge, g.KVSnapshotAge.Seconds(), t)
		}
	}
	ev := replicas.Events()
	counter(ch, isrShrinks, ev.ISRShrinks)
	counter(ch, isrExpands, ev.ISRExpands)
	counter(ch, leaderElections, ev.LeaderElections)
	counter(ch, moveBytes, ev.MoveBytes)
	gauge(ch, diskBytes, float64(logs), "logs")
	if kv, err := diskusage.Bytes(filepath.Join(s.cfg.DataDir, "tablet", "kv")); err == nil {
		gauge(ch, diskBytes, float64(kv), "kv")
	}
}

// collectMeta reports the metadata Raft of a meta node and, on its leader,
// the offline buckets.
func (c *nodeCollector) collectMeta(ch chan<- prometheus.Metric) {
	n := c.s.meta.Node()
	if n == nil {
		return
	}
	st := n.Status()
	gauge(ch, metaTerm, float64(st.Term))
	gauge(ch, metaCommitIndex, float64(st.CommitIndex))
	gauge(ch, metaAppliedIndex, float64(st.AppliedIndex))
	gauge(ch, metaLastIndex, float64(st.LastLogIndex))
	leader := 0.0
	if n.IsLeader() {
		leader = 1
	}
	gauge(ch, metaLeader, leader)
	if leader == 1 {
		for table, offline := range offlineBuckets(n.State()) {
			gauge(ch, bucketsOffline, float64(offline), table)
		}
	}
}

// offlineBuckets counts, per table (database.table), the buckets the
// metadata gives no leader, its partitions' included; every table is
// listed, 0 included.
func offlineBuckets(state *metastate.State) map[string]int {
	out := map[string]int{}
	_ = state.Read(func(v *metastate.View) error {
		dbs, err := v.Databases()
		if err != nil {
			return err
		}
		for _, db := range dbs {
			tables, err := v.Tables(db.Name)
			if err != nil {
				return err
			}
			for _, t := range tables {
				_, buckets, err := v.Table(db.Name, t.Name)
				if err != nil {
					return err
				}
				name := db.Name + "." + t.Name
				out[name] += 0
				// A partitioned table's buckets are its partitions'.
				if len(t.PartitionKeys) > 0 {
					parts, err := v.Partitions(t.Id)
					if err != nil {
						return err
					}
					for _, p := range parts {
						part, err := v.Buckets(p.GetId())
						if err != nil {
							return err
						}
						buckets = append(buckets, part...)
					}
				}
				for _, b := range buckets {
					if b.Leader == 0 {
						out[name]++
					}
				}
			}
		}
		return nil
	})
	return out
}

// collectDisk reports the metadata's folder (the tablet role's parts are
// reported with its tables).
func (c *nodeCollector) collectDisk(ch chan<- prometheus.Metric) {
	if c.s.meta.Node() == nil {
		return
	}
	if meta, err := diskusage.Bytes(filepath.Join(c.s.cfg.DataDir, "meta")); err == nil {
		gauge(ch, diskBytes, float64(meta), "meta")
	}
}
