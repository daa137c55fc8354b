package server

import (
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/tablet"
	"github.com/floedb/floe/storage/kvstore"
	"github.com/floedb/floe/storage/logstore"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	authid "github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/tlsconf"
)

// Roles a node can run.
const (
	RoleMeta   = "meta"
	RoleTablet = "tablet"
)

// DefaultTieringInterval is Config.TieringInterval's default.
const DefaultTieringInterval = tablet.DefaultTieringInterval

// Config configures a node. Zero values take the documented defaults.
type Config struct {
	// NodeID is the node's id, > 0 and unique in the cluster.
	NodeID uint32
	// Roles is a non-empty subset of {meta, tablet}.
	Roles []string
	// DataDir holds everything the node stores. Required.
	DataDir string
	// Listen is the RPC address (DRPC and Raft share it). Default 127.0.0.1:7700.
	Listen string
	// Advertise is the RPC address peers and clients use; default Listen
	// (with the bound port when Listen's port is 0).
	Advertise string
	// Gossip is the memberlist address; default: Listen's host, port + 1.
	Gossip string
	// Join lists RPC addresses of nodes to form or join a cluster with.
	Join []string
	// BootstrapExpect forms a new cluster once this many meta nodes know of
	// each other (and none belongs to a cluster yet). 0: only join.
	BootstrapExpect int
	// Rack places replicas apart; optional.
	Rack string
	// HTTP serves /healthz, /readyz, /metrics and /debug/pprof/ when set.
	HTTP string
	// MaxMessageBytes bounds one RPC message. Default 16 MiB.
	MaxMessageBytes int
	// IdleTimeout closes connections that send nothing. Default 60 s.
	IdleTimeout time.Duration
	// MessageTimeout bounds how long a request message, once started, may
	// take to arrive whole (transport.ServerConfig.MessageTimeout). 0:
	// transport's default, 30 s.
	MessageTimeout time.Duration
	// MaxInflightRequestBytes bounds the bytes of large requests the node
	// holds in reception and handling at once
	// (transport.ServerConfig.MaxInflightRequestBytes). 0: transport's
	// default, 32 MiB; negative: no bound.
	MaxInflightRequestBytes int
	// MaxRPCConns bounds the DRPC connections the node serves at once
	// (transport.ListenerConfig.MaxConns). 0: transport's default, 4096.
	MaxRPCConns int
	// MaxRaftConns bounds the incoming Raft connections, a share DRPC
	// clients cannot take (transport.ListenerConfig.MaxRaftConns). 0:
	// transport's default, 64.
	MaxRaftConns int
	// GossipProfile picks memberlist timings: "local" (the default: a dead
	// node is detected in about a second) or "lan" (memberlist's LAN
	// defaults, several seconds).
	GossipProfile string
	// LivenessGrace is how long a tablet node must stay dead in gossip
	// before the controller moves its leaderships. Default 1 s: with fast
	// gossip that moves leaders within the 3 s failover target. Nodes that
	// leave gracefully are handled at once.
	LivenessGrace time.Duration
	// LogSync is the fsync policy of bucket logs. Default always.
	LogSync logstore.SyncPolicy
	// SegmentMaxBytes is the segment size of bucket logs whose table does
	// not set log.segment.bytes; 0: that property's default (256 MiB).
	SegmentMaxBytes int64
	// Remote is the object store tiering moves sealed log segments to
	// (the same for every tablet node of the cluster); nil: no tiering,
	// logs stay local (log.ttl still deletes old segments).
	Remote tiering.ObjectStore
	// TieringInterval is how often bucket leaders upload their sealed
	// segments and apply remote retention. Default 1 min.
	TieringInterval time.Duration
	// LakeCatalog, when set, is an Iceberg REST catalog in which the
	// node registers the lake tables whose first task it runs, and moves
	// them to each version committed (docs/lake.md); nil: the lake is
	// read by path only.
	LakeCatalog *lake.RESTCatalog
	// MaxBatchBytes refuses larger produced batches. Default 8 MiB.
	MaxBatchBytes int
	// KV sizes the node's Badger database, which the stores of all its
	// primary-key bucket replicas share (Dir and Logger are set by the
	// node: DataDir/tablet/kv); zero fields take kvstore's defaults.
	KV kvstore.Config
	// KVRowCacheBytes bounds the node's cache of recently read rows of
	// primary-key tables, shared by its stores; 0: a quarter of the
	// node's memory (tablet.DefaultKVRowCacheBytes), negative: none.
	KVRowCacheBytes int64
	// KVBufferBytes bounds each primary-key bucket leader's uncommitted
	// writes (kvreplica.Config.BufferBytes); 0: 64 MiB.
	KVBufferBytes int64
	// Raft timing, for tests; zero takes raftmeta's defaults.
	RaftHeartbeatTimeout time.Duration
	RaftElectionTimeout  time.Duration
	// RaftSnapshotThreshold and RaftTrailingLogs override raftmeta's
	// defaults (tests: a tiny log makes followers install snapshots).
	RaftSnapshotThreshold uint64
	RaftTrailingLogs      uint64
	RaftSnapshotInterval  time.Duration
	// TLS names the node's certificate, key and the cluster's CA
	// (--tls-cert, --tls-key, --tls-ca): the port then speaks TLS 1.3
	// only, to nodes that show node certificates of the CA and to clients
	// as TLSClientAuth says. The certificate must be this node's
	// (floe://node/<NodeID>). Empty: plaintext.
	TLS tlsconf.Files
	// TLSClientAuth is what callers must show (--tls-client-auth): with
	// request (the default) or require, every call needs an identity, a
	// certificate or a password; none encrypts but identifies nobody.
	TLSClientAuth tlsconf.ClientAuth
	// Authorization turns ACLs on (--authorization): a call no ACL
	// allows is refused. Needs TLS with client authentication.
	Authorization bool
	// SuperUsers may make every call whatever the ACLs say
	// (--super-users).
	SuperUsers []authid.Principal
	// GossipKeyFile holds the gossip encryption keys (--gossip-key-file):
	// base64 AES keys of 16, 24 or 32 bytes, one per line, the first
	// used to encrypt; read again when it changes. Empty: gossip is not
	// encrypted.
	GossipKeyFile string
	// Logger receives the node's messages; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if c.NodeID == 0 {
		return pkgerr.New("server", "--id must be a positive integer")
	}
	if len(c.Roles) == 0 {
		return pkgerr.New("server", "at least one role is required (meta, tablet)")
	}
	for _, r := range c.Roles {
		if r != RoleMeta && r != RoleTablet {
			return pkgerr.Errorf("server", "unknown role %q (want meta or tablet)", r)
		}
	}
	if c.DataDir == "" {
		return pkgerr.New("server", "--data-dir is required")
	}
	if c.BootstrapExpect < 0 {
		return pkgerr.New("server", "--bootstrap-expect must not be negative")
	}
	if c.BootstrapExpect > 0 && !c.HasRole(RoleMeta) {
		return pkgerr.New("server", "--bootstrap-expect needs the meta role")
	}
	for _, a := range append([]string{c.Listen, c.Advertise, c.Gossip}, c.Join...) {
		if a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return pkgerr.Errorf("server", "bad address %q: %v", a, err)
		}
	}
	if c.KVBufferBytes < 0 {
		return pkgerr.New("server", "--kv-buffer-bytes must not be negative")
	}
	if c.TieringInterval < 0 {
		return pkgerr.New("server", "--tiering-interval must not be negative")
	}
	if c.MessageTimeout < 0 {
		return pkgerr.New("server", "--rpc-message-timeout must not be negative")
	}
	if c.MaxRPCConns < 0 || c.MaxRaftConns < 0 {
		return pkgerr.New("server", "--max-rpc-conns and --max-raft-conns must not be negative")
	}
	if err := c.validateSecurity(); err != nil {
		return err
	}
	kv := c.KV
	kv.Dir = c.DataDir // set by the node; here only to check the sizes
	if err := kv.Validate(); err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	return nil
}

// validateSecurity checks the security settings go together.
func (c *Config) validateSecurity() error {
	if err := c.TLS.Validate(); err != nil {
		return pkgerr.Errorf("server", "%w", err)
	}
	tlsOn := c.TLS.Cert != ""
	switch {
	case c.TLS.Enabled() && !tlsOn:
		return pkgerr.New("server", "--tls-ca needs --tls-cert and --tls-key: a node serves TLS with its own certificate")
	case c.TLSClientAuth != tlsconf.ClientAuthRequest && !tlsOn:
		return pkgerr.New("server", "--tls-client-auth needs TLS (--tls-cert, --tls-key, --tls-ca)")
	case c.Authorization && !tlsOn:
		return pkgerr.New("server", "--authorization needs TLS (--tls-cert, --tls-key, --tls-ca): without it nobody is identified")
	case c.Authorization && c.TLSClientAuth == tlsconf.ClientAuthNone:
		return pkgerr.New("server", "--authorization needs --tls-client-auth request or require: with none nobody is identified")
	case len(c.SuperUsers) > 0 && !c.Authorization:
		return pkgerr.New("server", "--super-users needs --authorization")
	}
	return nil
}

// HasRole reports whether the node runs role.
func (c *Config) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7700"
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = 16 << 20
	}
	if c.GossipProfile == "" {
		c.GossipProfile = "local"
	}
	if c.LivenessGrace == 0 {
		c.LivenessGrace = time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.TieringInterval == 0 {
		c.TieringInterval = DefaultTieringInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
