package meta

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/raftnet"
)

// Config is the meta role's part of the node's configuration
// (server.Config documents each field).
type Config struct {
	NodeID uint32
	// DataDir is the node's data folder; the role keeps its Raft state
	// and metadata state file in DataDir/meta.
	DataDir string
	// Advertise is the node's RPC address, which Raft shares.
	Advertise string
	// Incarnation names this data folder's life (the node's identity).
	Incarnation     string
	Join            []string
	BootstrapExpect int
	LivenessGrace   time.Duration

	RaftHeartbeatTimeout  time.Duration
	RaftElectionTimeout   time.Duration
	RaftSnapshotThreshold uint64
	RaftTrailingLogs      uint64
	RaftSnapshotInterval  time.Duration
}

// Peers is the node's discovery of other nodes through Hello, which a
// forming or joining meta node uses.
type Peers interface {
	// HelloAll greets every --join address and every peer met so far.
	HelloAll(ctx context.Context) []*pb.HelloResponse
	// MetaPeers lists the known meta nodes, this one included, by id.
	MetaPeers() []*pb.PeerInfo
	// CheckCandidate refuses, saying why, unless addr answers as meta node
	// id of this cluster with its metadata Raft running.
	CheckCandidate(ctx context.Context, id uint32, addr string) error
}

// Deps is what the meta role takes from the node.
type Deps struct {
	Config Config
	// Listener carries Raft's streams on the node's one port.
	Listener *transport.Listener
	// Pool dials the node's peers.
	Pool  *transport.Pool
	Peers Peers
	// ClusterID is the cluster the node belongs to, "" until it knows;
	// AdoptClusterID records it, once.
	ClusterID      func() string
	AdoptClusterID func(id string) error
	// Gossip is the node's gossip, nil until it runs.
	Gossip func() *gossip.Gossip
	// CallMeta runs fn against a meta node: how a node that runs no Raft
	// (tablet only) hands on what the Meta service is asked.
	CallMeta func(ctx context.Context, fn func(context.Context, pb.DRPCMetaClient) error) error
	// MaxBatchFor is the largest batch a client should send to a table
	// (GetTable tells it).
	MaxBatchFor func(*pb.TableRecord) int
	// WriterKey is the cluster's writer key as this node knows it (nil
	// until it does); nil func: writer ids are not bound to principals.
	WriterKey func() []byte
	// TLS is the node's TLS configuration for Raft's dials; nil:
	// plaintext. NodesOnly makes Raft accept only peers that showed node
	// certificates.
	TLS       *tls.Config
	NodesOnly bool
	// Go runs a goroutine the node waits for when it stops.
	Go func(func())
	// Stop stops the node with err: a failure it cannot serve through.
	Stop   func(error)
	Logger *slog.Logger
}

// Role is a node's meta role: the metadata Raft group (formed or joined,
// formation.go), the Meta service over it (forwarded to the leader,
// forward.go), the controller, the metadata watch feed, membership and
// status. Every node keeps one: without the meta role it runs no Raft, and
// its Meta service hands requests on to a meta node (Deps.CallMeta) or
// answers UNAVAILABLE.
type Role struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	pool *transport.Pool
	node atomic.Pointer[raftmeta.Node]
}

// New makes the meta role; Start forms or joins the cluster.
func New(deps Deps) *Role {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	return &Role{cfg: deps.Config, deps: deps, log: deps.Logger, pool: deps.Pool}
}

// Service is the Meta service's handlers but Hello, which the node
// answers (every node does, whatever its roles).
type Service struct{ metaService }

// Service returns the role's Meta service.
func (r *Role) Service() *Service { return &Service{metaService{r: r}} }

// Node is the metadata Raft node, nil until Start opened it (and on a node
// without the meta role).
func (r *Role) Node() *raftmeta.Node { return r.node.Load() }

// Start forms or joins the cluster, starts Raft and the background work of
// a meta node; the node runs in a cluster once it returns nil.
func (r *Role) Start(ctx context.Context) error {
	if err := r.form(ctx); err != nil {
		return err
	}
	n := r.node.Load()
	r.deps.Go(func() { r.stopWhenMetaFails(ctx, n) })
	r.deps.Go(func() { r.leaderLoop(ctx) })
	return nil
}

// RunController runs the controller until ctx ends (controller.go): once
// the node gossips.
func (r *Role) RunController(ctx context.Context) { r.controllerLoop(ctx) }

// Propose replicates cmd through the leader and turns a refusal recorded
// in its result into an error.
func (r *Role) Propose(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	return r.propose(ctx, cmd)
}

// Close stops Raft.
func (r *Role) Close() {
	if n := r.node.Load(); n != nil {
		if err := n.Close(); err != nil {
			r.log.Warn("raft shutdown", "err", err)
		}
	}
}

// openRaft starts the Raft node over the one-port stream layer.
func (r *Role) openRaft() (*raftmeta.Node, error) {
	layer := raftnet.NewStreamLayer(r.deps.Listener, raftnet.StreamConfig{
		ClusterID:           r.deps.ClusterID(),
		Incarnation:         r.cfg.Incarnation,
		ExpectedIncarnation: r.incarnationAt,
		TLS:                 r.deps.TLS,
		NodesOnly:           r.deps.NodesOnly,
		Logger:              r.log,
	})
	n, err := raftmeta.Open(raftmeta.Config{
		NodeID:            r.cfg.NodeID,
		Dir:               filepath.Join(r.cfg.DataDir, "meta"),
		Stream:            advertisedStream{StreamLayer: layer, addr: advertisedAddr(r.cfg.Advertise)},
		HeartbeatTimeout:  r.cfg.RaftHeartbeatTimeout,
		ElectionTimeout:   r.cfg.RaftElectionTimeout,
		SnapshotThreshold: r.cfg.RaftSnapshotThreshold,
		TrailingLogs:      r.cfg.RaftTrailingLogs,
		SnapshotInterval:  r.cfg.RaftSnapshotInterval,
		Logger:            r.log,
	})
	if err != nil {
		return nil, err
	}
	r.node.Store(n)
	return n, nil
}

// stopWhenMetaFails stops the node when its metadata voter stopped because
// its state file failed to commit (raftmeta.Node.Failed): a node that kept
// serving would answer from a state machine that skipped entries. Run then
// returns the voter's error, which wraps raftmeta.ErrStateMachineFailed.
func (r *Role) stopWhenMetaFails(ctx context.Context, n *raftmeta.Node) {
	select {
	case <-n.Failed():
		r.deps.Stop(n.Err())
	case <-ctx.Done():
	}
}

// incarnationAt is the incarnation this node's metadata has registered at a
// Raft address, "" when none: Raft dials name it so a wiped node's new
// incarnation refuses peers that still expect the old one.
func (r *Role) incarnationAt(address string) string {
	n := r.node.Load()
	if n == nil {
		return ""
	}
	for _, rec := range n.State().Nodes() {
		if rec.RpcAddress == address {
			return rec.Incarnation
		}
	}
	return ""
}

// advertisedStream reports the advertised address as its own, which Raft
// sends to peers.
type advertisedStream struct {
	raft.StreamLayer
	addr net.Addr
}

func (a advertisedStream) Addr() net.Addr { return a.addr }

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

// NewID is a fresh random id: request ids, cluster ids, incarnations.
func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoRaftState is a data folder with Raft state but no cluster id in
// the node's identity file (server's node.json).
func errNoRaftState(raftDir string) error {
	return pkgerr.Errorf("server", "%s has Raft state but no cluster id in node.json", raftDir)
}
