package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/server/meta"
	"github.com/floedb/floe/server/tablet"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// Server is one Floe node.
type Server struct {
	cfg       Config
	log       *slog.Logger
	advertise string
	dirLock   *os.File // the data folder's lock, held while the node runs

	idMu      sync.Mutex
	id        *identity
	clusterID atomic.Pointer[string]

	sec     *security
	lis     *transport.Listener
	httpLis net.Listener
	rpc     *transport.Server
	pool    *transport.Pool
	metrics *metrics // served on /metrics (metrics.go)

	meta *meta.Role // every node's: runs Raft only with the meta role

	tablet *tablet.Role // nil without the tablet role
	gossip atomic.Pointer[gossip.Gossip]

	peersMu     sync.Mutex
	peers       map[uint32]*pb.PeerInfo // met through Hello
	gossipAddrs map[uint32]string       // their gossip addresses

	joinMu      sync.Mutex
	joinReports joinReporter // paces warnings about peers that do not answer

	formed       chan struct{}          // closed once Raft runs (meta) or the node registered (tablet)
	registered   chan struct{}          // closed once this run's registration is committed
	registeredAt atomic.Uint64          // the Raft index of that registration (the node epoch)
	registerErr  atomic.Pointer[string] // why the registration was refused, nil when it was not
	fatal        chan error             // a failure the node cannot serve through: Run stops with it
	wg           sync.WaitGroup

	// watchOpen opens the tablet role's metadata watch and onMetadata sees
	// what its replicas acted on: seams for tests, set before Run.
	watchOpen  func(ctx context.Context, addr string, from uint64) (tablet.MetaStream, error)
	onMetadata func(*pb.MetadataUpdate)
}

// New validates the configuration, loads the data folder's identity and binds
// the RPC port, so Addr is known before Run.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	built := false
	defer func() {
		if !built {
			unlockDataDir(lock)
		}
	}()
	id, err := loadIdentity(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, id: id, dirLock: lock, peers: map[uint32]*pb.PeerInfo{}, gossipAddrs: map[uint32]string{}, formed: make(chan struct{}),
		registered: make(chan struct{}), fatal: make(chan error, 1)}
	s.log = cfg.Logger.With("node", cfg.NodeID)
	knownID := id.ClusterID // a copy: adoptClusterID writes s.id under idMu
	s.clusterID.Store(&knownID)

	if s.sec, err = newSecurity(cfg); err != nil {
		return nil, err
	}
	lc := transport.ListenerConfig{MaxConns: cfg.MaxRPCConns, MaxRaftConns: cfg.MaxRaftConns, Logger: s.log}
	if s.sec.tls != nil {
		if lc.TLS, err = s.sec.tls.ServerConfig(cfg.TLSClientAuth); err != nil {
			return nil, pkgerr.Errorf("server", "%w", err)
		}
	}
	s.lis, err = transport.Listen(cfg.Listen, lc)
	if err != nil {
		return nil, pkgerr.Errorf("server", "listen on %s: %w", cfg.Listen, err)
	}
	s.advertise = cfg.Advertise
	if s.advertise == "" {
		s.advertise = advertiseFor(cfg.Listen, s.lis.Addr())
	}
	if s.metrics, err = newMetrics(s); err != nil {
		s.lis.Close()
		return nil, pkgerr.Errorf("server", "metrics: %w", err)
	}
	clusterID := func() string { return *s.clusterID.Load() }
	s.pool = transport.NewPool(transport.PoolConfig{ClusterID: clusterID, TLS: s.sec.dialTLS()})
	if cfg.HasRole(RoleTablet) {
		s.tablet = s.newTablet()
	}
	s.rpc = transport.NewServer(transport.ServerConfig{
		MaxMessageBytes:         cfg.MaxMessageBytes,
		IdleTimeout:             cfg.IdleTimeout,
		MessageTimeout:          cfg.MessageTimeout,
		MaxInflightRequestBytes: cfg.MaxInflightRequestBytes,
		ClusterID:               clusterID,
		FieldLimits:             requestFieldLimits(),
		Observer:                s.metrics,
		Security:                s.sec.transportSecurity(),
		Logger:                  s.log,
	})
	s.meta = s.newMeta()
	if err := pb.DRPCRegisterMeta(s.rpc.Mux(), metaServer{Service: s.meta.Service(), s: s}); err != nil {
		s.lis.Close()
		return nil, pkgerr.Errorf("server", "%w", err)
	}
	if cfg.HasRole(RoleTablet) {
		if err := pb.DRPCRegisterTablet(s.rpc.Mux(), s.tablet.Service()); err != nil {
			s.lis.Close()
			return nil, pkgerr.Errorf("server", "%w", err)
		}
	}
	if cfg.HTTP != "" {
		if s.httpLis, err = net.Listen("tcp", cfg.HTTP); err != nil {
			s.lis.Close()
			return nil, pkgerr.Errorf("server", "listen on %s: %w", cfg.HTTP, err)
		}
	}
	built = true
	return s, nil
}

// newTablet makes the tablet role over the node's pool and metadata view.
func (s *Server) newTablet() *tablet.Role {
	cfg := s.cfg
	s.watchOpen = func(ctx context.Context, addr string, from uint64) (tablet.MetaStream, error) {
		return pb.NewDRPCMetaClient(s.pool.Conn(addr)).WatchMetadata(ctx,
			&pb.WatchMetadataRequest{NodeId: cfg.NodeID, FromIndex: from})
	}
	return tablet.New(tablet.Deps{
		Config: tablet.Config{NodeID: cfg.NodeID, DataDir: cfg.DataDir, LogSync: cfg.LogSync,
			SegmentMaxBytes: cfg.SegmentMaxBytes, Remote: cfg.Remote, TieringInterval: cfg.TieringInterval,
			MaxBatchBytes: cfg.MaxBatchBytes, KV: cfg.KV, KVRowCacheBytes: cfg.KVRowCacheBytes, KVBufferBytes: cfg.KVBufferBytes,
			LakeCatalog: cfg.LakeCatalog},
		Meta:      tabletMeta{s},
		Pool:      s.pool,
		ClusterID: s.ClusterID,
		OpenWatch: func(ctx context.Context, addr string, from uint64) (tablet.MetaStream, error) {
			return s.watchOpen(ctx, addr, from)
		},
		OnMetadata: func(u *pb.MetadataUpdate) {
			if !cfg.HasRole(RoleMeta) {
				s.sec.apply(u) // a meta node follows its own state
			}
			if s.onMetadata != nil {
				s.onMetadata(u)
			}
		},
		WatchIdle: meta.WatchIdle,
		Go:        s.goRun,
		Stop:      s.stop,
		RPCs:      s.metrics,
		Metrics:   s.metrics.tablet,
		Logger:    s.log,
	})
}

// newMeta makes the meta role over the node's listener, pool and
// discovery.
func (s *Server) newMeta() *meta.Role {
	cfg := s.cfg
	return meta.New(meta.Deps{
		Config: meta.Config{NodeID: cfg.NodeID, DataDir: cfg.DataDir, Advertise: s.advertise, Incarnation: s.id.Incarnation,
			Join: cfg.Join, BootstrapExpect: cfg.BootstrapExpect, LivenessGrace: cfg.LivenessGrace,
			RaftHeartbeatTimeout: cfg.RaftHeartbeatTimeout, RaftElectionTimeout: cfg.RaftElectionTimeout,
			RaftSnapshotThreshold: cfg.RaftSnapshotThreshold, RaftTrailingLogs: cfg.RaftTrailingLogs,
			RaftSnapshotInterval: cfg.RaftSnapshotInterval},
		Listener:       s.lis,
		Pool:           s.pool,
		Peers:          nodePeers{s},
		ClusterID:      s.ClusterID,
		AdoptClusterID: s.adoptClusterID,
		Gossip:         s.gossip.Load,
		CallMeta:       s.callMeta,
		MaxBatchFor: func(t *pb.TableRecord) int {
			return tablet.MaxBatchFor(t, cfg.MaxBatchBytes, cfg.SegmentMaxBytes)
		},
		WriterKey: s.sec.WriterKey,
		TLS:       s.sec.dialTLS(),
		NodesOnly: s.sec.authz != nil,
		Go:        s.goRun,
		Stop:      s.stop,
		Logger:    s.log,
	})
}

// advertiseFor derives the address to advertise from the listen address and
// the bound one: the listen host (unless unspecified) with the bound port.
func advertiseFor(listen string, bound net.Addr) string {
	host, _, _ := net.SplitHostPort(listen)
	_, port, _ := net.SplitHostPort(bound.String())
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Addr is the RPC address the node advertises.
func (s *Server) Addr() string { return s.advertise }

// ClusterID is the cluster the node belongs to, "" until it knows.
func (s *Server) ClusterID() string { return *s.clusterID.Load() }

// Formed is closed once the node runs in a cluster.
func (s *Server) Formed() <-chan struct{} { return s.formed }

// Ready is closed once the node is registered and, with the tablet role, its
// replicas act on metadata at or above that registration: a table created
// from then on can be placed on it. /readyz says whether it still is.
func (s *Server) Ready() <-chan struct{} {
	if s.tablet != nil {
		return s.tablet.Following() // which waits for the registration
	}
	return s.registered
}

// Run serves until ctx ends, then shuts the node down and returns.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The listener outlives ctx: shutdown closes it after Raft, whose
	// transport would otherwise see its stream layer fail first and log an
	// error for a routine stop.
	s.goRun(func() { s.stop(nonCanceled(s.lis.Run(context.WithoutCancel(ctx)))) })
	s.goRun(func() { s.stop(nonCanceled(s.rpc.Serve(ctx, s.lis.DRPC()))) })
	if s.httpLis != nil {
		s.goRun(func() { s.stop(s.serveHTTP(ctx, s.httpLis)) })
	}
	s.log.Info("node listening", "address", s.advertise, "roles", s.cfg.Roles)

	// A stop ends the run at any time, startup included: a listener that
	// dies while the node waits for its peers must not leave it waiting.
	var stopErr error
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case stopErr = <-s.fatal:
			s.log.Error("stopping the node", "err", stopErr)
			cancel()
		case <-ctx.Done():
		}
	}()
	var runErr error
	if s.cfg.HasRole(RoleMeta) {
		runErr = s.startMeta(ctx)
	} else {
		runErr = s.startTabletOnly(ctx)
	}
	if runErr == nil {
		runErr = s.startAfterFormed(ctx)
	}
	if runErr == nil {
		<-ctx.Done()
	}
	cancel()
	<-stopped
	if stopErr != nil {
		runErr = stopErr // the cause; startup may only have seen ctx end
	}
	s.shutdown()
	s.wg.Wait()
	if runErr == nil || errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}

// stop makes Run shut the node down and return err (the first one wins); a
// nil err does nothing. It is the one way a node stops on a failure it cannot
// serve through: a listener's, a replica's log's, the metadata voter's.
func (s *Server) stop(err error) {
	if err == nil {
		return
	}
	select {
	case s.fatal <- err:
	default:
	}
}

func (s *Server) goRun(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

func nonCanceled(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (s *Server) shutdown() {
	s.leaveGossip()
	if s.tablet != nil {
		s.tablet.Close()
	}
	s.meta.Close()
	s.closeGossip()
	s.lis.Close()
	s.pool.Close()
	unlockDataDir(s.dirLock)
}

// startAfterFormed starts, once the node knows its cluster, gossip, the
// controller (meta nodes) and the replica manager (tablet nodes).
func (s *Server) startAfterFormed(ctx context.Context) error {
	select {
	case <-s.formed:
	case <-ctx.Done():
		return nil
	}
	if err := s.startGossip(ctx); err != nil {
		return err
	}
	if s.cfg.HasRole(RoleMeta) {
		s.goRun(func() { s.meta.RunController(ctx) })
	}
	if s.tablet != nil {
		return s.tablet.Start(ctx)
	}
	return nil
}

// startMeta forms or joins the cluster, starts Raft and the background work
// of a meta node.
func (s *Server) startMeta(ctx context.Context) error {
	if err := s.meta.Start(ctx); err != nil {
		return err
	}
	if n := s.meta.Node(); n != nil {
		st := n.State()
		s.goRun(func() { s.sec.followLocalState(ctx, st) })
	}
	close(s.formed)
	s.goRun(func() { s.registerSelf(ctx) })
	return nil
}

// startTabletOnly learns the cluster id from the meta nodes and registers.
func (s *Server) startTabletOnly(ctx context.Context) error {
	if len(s.cfg.Join) == 0 {
		return pkgerr.New("server", "a tablet-only node needs --join with meta node addresses")
	}
	s.goRun(func() {
		pace := backoff.Backoff{Min: meta.FormRetry, Max: time.Second, Jitter: true}
		for s.ClusterID() == "" {
			for _, r := range s.helloAll(ctx) {
				if r.ClusterId != "" && r.Formed {
					if err := s.adoptClusterID(r.ClusterId); err != nil {
						s.log.Error("cannot join", "err", err)
						return
					}
					break
				}
			}
			if !pace.Wait(ctx) {
				return
			}
		}
		s.registerSelf(ctx)
		close(s.formed)
	})
	return nil
}

// adoptClusterID records the cluster this node belongs to, once.
func (s *Server) adoptClusterID(id string) error {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	if s.id.ClusterID == id {
		return nil
	}
	if s.id.ClusterID != "" {
		return pkgerr.Errorf("server", "this node belongs to cluster %s, peers are in %s", s.id.ClusterID, id)
	}
	s.id.ClusterID = id
	if err := s.id.save(s.cfg.DataDir); err != nil {
		return err
	}
	s.clusterID.Store(&id)
	s.log.Info("joined cluster", "cluster_id", id)
	return nil
}
