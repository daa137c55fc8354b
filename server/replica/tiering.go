package replica

import (
	"log/slog"
	"math"
	"time"

	"github.com/floedb/floe/server/replication"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/transport/pb"
)

// logConfig is the log configuration of a replica of info's table: the
// node's template, with the table's segment size (the node's own
// SegmentMaxBytes, when set, stands in for a table that does not set
// log.segment.bytes: tests roll small segments that way), its log.ttl
// and its local retention of remote segments.
func logConfig(tmpl logstore.Config, dir string, logger *slog.Logger, info *tableInfo) logstore.Config {
	cfg := tmpl
	cfg.Dir, cfg.Logger = dir, logger
	if info.segmentBytesSet || tmpl.SegmentMaxBytes == 0 {
		cfg.SegmentMaxBytes = info.props.LogSegmentBytes
	}
	if cfg.MaxBatchBytes > int(cfg.SegmentMaxBytes) {
		cfg.MaxBatchBytes = int(cfg.SegmentMaxBytes)
	}
	cfg.RetentionAge = info.props.LogTTL
	cfg.LocalRetentionSegments = info.props.LogLocalSegments
	cfg.LocalRetentionAge = info.props.LogLocalTTL
	return cfg
}

// noteRemoteLog records the bucket's committed remote log, when newer than
// the one known, and lets the log's retention use it.
func (r *Replica) noteRemoteLog(rl *pb.RemoteLog) {
	for {
		cur := r.remote.Load()
		if rl == nil || (cur != nil && cur.GetVersion() >= rl.GetVersion()) {
			return
		}
		if r.remote.CompareAndSwap(cur, rl) {
			break
		}
	}
	r.refreshRetention()
}

// RemoteLog is the bucket's committed remote log as last seen (nil: none).
func (r *Replica) RemoteLog() *pb.RemoteLog { return r.remote.Load() }

// refreshRetention sets the log's retention bounds from what the replica
// knows: local copies may go below the committed remote end, for a
// primary-key table only below what its store applied too (the applier
// reads the local log); the log's age limit deletes a log table's records
// from anywhere, a primary-key table's from nowhere until KV snapshots let
// the changelog below them go.
func (r *Replica) refreshRetention() {
	b := logstore.RetentionBounds{RemoteEnd: r.remote.Load().GetEndOffset(), ExpireBelow: math.MaxInt64}
	if r.table().primaryKey {
		b.ExpireBelow = 0
		applied := int64(0)
		if r.kv != nil {
			if a, err := r.kv.AppliedOffset(); err == nil {
				applied = a
			}
		}
		b.RemoteEnd = min(b.RemoteEnd, applied)
	}
	if b != r.log.Bounds() {
		r.log.SetRetentionBounds(b)
	}
}

// LeaderLog is what tiering needs of a bucket this node leads.
type LeaderLog struct {
	ID            BucketID
	Log           *logstore.Log
	LeaderEpoch   int32
	HighWatermark int64
	// Remote is the committed remote log (nil: none yet).
	Remote *pb.RemoteLog
	// TTL is the table's log.ttl (0: forever); PrimaryKey says the
	// changelog below the newest KV snapshot only may expire.
	TTL        time.Duration
	PrimaryKey bool
}

// LeaderLogs lists the buckets this node leads, and on the way refreshes
// every replica's retention bounds (a primary-key store's applied offset
// moves without telling).
func (m *Manager) LeaderLogs() []LeaderLog {
	m.mu.Lock()
	reps := make([]*Replica, 0, len(m.replicas))
	for _, r := range m.replicas {
		reps = append(reps, r)
	}
	m.mu.Unlock()
	var out []LeaderLog
	for _, r := range reps {
		role, _, epoch, hw := r.state()
		if role == replication.RoleNone {
			continue
		}
		r.refreshRetention()
		if role != replication.RoleLeader {
			continue
		}
		info := r.table()
		out = append(out, LeaderLog{ID: r.id, Log: r.log, LeaderEpoch: epoch, HighWatermark: hw,
			Remote: r.remote.Load(), TTL: info.props.LogTTL, PrimaryKey: info.primaryKey})
	}
	return out
}

// NoteRemoteLog records a remote log this node's leader just committed,
// before the metadata stream brings it.
func (m *Manager) NoteRemoteLog(id BucketID, rl *pb.RemoteLog) {
	if r := m.replica(id); r != nil {
		r.noteRemoteLog(rl)
	}
}
