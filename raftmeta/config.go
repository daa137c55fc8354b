package raftmeta

import (
	"log/slog"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/hashicorp/raft"
)

// Defaults for the zero Config. The timeouts are hashicorp/raft's own: a
// new leader within about two seconds of the old one's death on a loaded
// machine. Half of them (heartbeats every 50–100 ms) elected a little
// sooner, but the leader's heartbeats were then most of what an idle
// cluster's nodes spent their CPU on.
const (
	DefaultHeartbeatTimeout   = 1000 * time.Millisecond
	DefaultElectionTimeout    = 1000 * time.Millisecond
	DefaultLeaderLeaseTimeout = 500 * time.Millisecond
	DefaultSnapshotThreshold  = 8192
	DefaultSnapshotInterval   = 2 * time.Minute
	DefaultTrailingLogs       = 10240
	DefaultApplyTimeout       = 10 * time.Second
	snapshotsRetained         = 2
)

// Config configures a Node.
type Config struct {
	// NodeID is this node's id (> 0); its Raft server id is the decimal string.
	NodeID uint32
	// Dir holds raft.db, snapshots/ and state.db. Required.
	Dir string
	// Stream carries Raft traffic (the server's one-port stream layer); its
	// Addr must be the address peers reach this node at. Required.
	Stream raft.StreamLayer
	// HeartbeatTimeout, ElectionTimeout and LeaderLeaseTimeout tune
	// failure detection; see hashicorp/raft.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot
	// trigger a new one; SnapshotInterval how often that is checked.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so a
	// slightly lagging follower catches up without a snapshot.
	TrailingLogs uint64
	// Logger receives Raft's and the node's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == 0:
		return pkgerr.New("raftmeta", "config: NodeID must be > 0")
	case c.Dir == "":
		return pkgerr.New("raftmeta", "config: Dir is required")
	case c.Stream == nil:
		return pkgerr.New("raftmeta", "config: Stream is required")
	case c.HeartbeatTimeout < 0, c.ElectionTimeout < 0, c.LeaderLeaseTimeout < 0, c.SnapshotInterval < 0:
		return pkgerr.Errorf("raftmeta", "config: negative timeout")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = min(DefaultLeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	// The state file survives restarts with its applied index: never roll it
	// back to a snapshot on start.
	rc.NoSnapshotRestoreOnStart = true
	// Raft's metrics (bridged to /metrics) name peers in labels only, not
	// also in a series per peer.
	rc.NoLegacyTelemetry = true
	rc.Logger = newHCLog(c.Logger, "raft")
	return rc
}
