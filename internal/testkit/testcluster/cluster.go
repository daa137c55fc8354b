package testcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/server"
	"github.com/floedb/floe/tiering"
	"github.com/floedb/floe/tiering/lake"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Options shape a cluster. The zero value is one node.
type Options struct {
	// Nodes is the number of nodes, each with both roles (meta and
	// tablet), ids 1 to Nodes. Default 1.
	Nodes int
	// Dir holds the nodes' data folders; "" makes a temporary folder that
	// Close removes.
	Dir string
	// Logger receives the nodes' messages; nil discards them.
	Logger *slog.Logger
	// Remote is the object store every node tiers sealed log segments to
	// (server.Config.Remote), every TieringInterval; nil: no tiering.
	Remote          tiering.ObjectStore
	TieringInterval time.Duration
	// LakeCatalog is the REST catalog the nodes register lake tables in
	// (server.Config.LakeCatalog); nil: none.
	LakeCatalog *lake.RESTCatalog
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	if o.Nodes < 0 {
		return fmt.Errorf("testcluster: Nodes %d is negative", o.Nodes)
	}
	return nil
}

// startTimeout bounds the start of a cluster, or a node's restart, until it
// serves: a bug fails the start instead of hanging the test binary.
const startTimeout = 60 * time.Second

// Cluster is a set of real Floe nodes running in this process on loopback,
// each behind its own fault-injecting Proxy. Its methods are safe for
// concurrent use.
type Cluster struct {
	dir     string
	tempDir bool
	nodes   []*Node
	pool    *transport.Pool // straight to the nodes, past their proxies
}

// Node is one node of a Cluster.
type Node struct {
	ID    uint32
	proxy *Proxy
	cfg   server.Config

	mu      sync.Mutex
	stop    context.CancelFunc // nil while stopped
	done    chan error         // Run's result
	readyCh chan struct{}      // closed once the node serves (or stops)
}

// Start starts the nodes, forms one cluster of them and waits until every
// node is registered and alive, the metadata has a leader and every node
// serves. Close stops it.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	n := max(opts.Nodes, 1)
	c := &Cluster{dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "floe-testcluster-"); err != nil {
			return nil, err
		}
		c.tempDir = true
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for i := range n {
		p, err := newProxy()
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, &Node{ID: uint32(i + 1), proxy: p})
	}
	c.pool = transport.NewPool(transport.PoolConfig{Dialer: c.dialDirect})
	for _, nd := range c.nodes {
		gossip, err := freeAddr(true)
		if err != nil {
			return nil, err
		}
		nd.cfg = server.Config{
			NodeID: nd.ID, Roles: []string{server.RoleMeta, server.RoleTablet},
			DataDir: filepath.Join(c.dir, fmt.Sprintf("node%d", nd.ID)), Advertise: nd.proxy.Addr(),
			Gossip: gossip, Join: c.Addrs(), BootstrapExpect: n,
			// The row cache defaults to a quarter of the machine's memory
			// per node; a test needs little.
			KVRowCacheBytes: 8 << 20,
			Logger:          logger,
			Remote:          opts.Remote,
			TieringInterval: opts.TieringInterval,
			LakeCatalog:     opts.LakeCatalog,
		}
		if err := nd.start(); err != nil {
			return nil, err
		}
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for _, nd := range c.nodes {
		if err := nd.waitReady(sctx); err != nil {
			return nil, err
		}
	}
	if err := c.waitRegistered(sctx); err != nil {
		return nil, err
	}
	return c, nil
}

// start runs the node on a fresh listen port and points its proxy there.
func (nd *Node) start() error {
	listen, err := freeAddr(false)
	if err != nil {
		return err
	}
	cfg := nd.cfg
	cfg.Listen = listen
	srv, err := server.New(cfg)
	if err != nil {
		return fmt.Errorf("testcluster: node %d: %w", nd.ID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() { done <- srv.Run(ctx) }()
	go func() {
		select {
		case <-srv.Ready():
		case <-ctx.Done():
		}
		close(ready)
	}()
	nd.mu.Lock()
	nd.stop, nd.done, nd.cfg.Listen = cancel, done, listen
	nd.readyCh = ready
	nd.mu.Unlock()
	nd.proxy.setTarget(listen)
	return nil
}

// waitReady waits until the node says it can serve.
func (nd *Node) waitReady(ctx context.Context) error {
	nd.mu.Lock()
	ready, done := nd.readyCh, nd.done
	nd.mu.Unlock()
	select {
	case <-ready:
		return nil
	case err := <-done:
		done <- err // keep it for Stop
		return fmt.Errorf("testcluster: node %d stopped while starting: %v", nd.ID, err)
	case <-ctx.Done():
		return fmt.Errorf("testcluster: node %d not ready: %w", nd.ID, ctx.Err())
	}
}

// Addr is the node's RPC address as clients and peers see it: its proxy's.
func (nd *Node) Addr() string { return nd.proxy.Addr() }

// Proxy is the fault-injecting proxy in front of the node.
func (nd *Node) Proxy() *Proxy { return nd.proxy }

// Stop stops the node gracefully (it leaves gossip, so the controller moves
// its leaderships at once) and waits for it. Its proxy then refuses
// connections. Stopping a stopped node does nothing.
func (nd *Node) Stop() error {
	nd.mu.Lock()
	stop, done := nd.stop, nd.done
	nd.stop = nil
	nd.mu.Unlock()
	if stop == nil {
		return nil
	}
	nd.proxy.setTarget("")
	nd.proxy.CutAll()
	stop()
	if err := <-done; err != nil {
		return fmt.Errorf("testcluster: node %d: %w", nd.ID, err)
	}
	return nil
}

// Restart starts a stopped node again on its data folder and waits until it
// serves and is registered again.
func (c *Cluster) Restart(ctx context.Context, nd *Node) error {
	if err := nd.start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := nd.waitReady(ctx); err != nil {
		return err
	}
	return c.waitRegistered(ctx)
}

// Nodes returns the nodes, node 1 first.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// Node returns the node with id, nil if none.
func (c *Cluster) Node(id uint32) *Node {
	for _, nd := range c.nodes {
		if nd.ID == id {
			return nd
		}
	}
	return nil
}

// Addrs returns the nodes' RPC addresses (their proxies'), node 1 first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		out[i] = nd.Addr()
	}
	return out
}

// Close stops every node and proxy and removes a temporary data folder.
func (c *Cluster) Close() error {
	var errs []error
	for _, nd := range c.nodes {
		errs = append(errs, nd.Stop())
	}
	for _, nd := range c.nodes {
		errs = append(errs, nd.proxy.Close())
	}
	if c.pool != nil {
		errs = append(errs, c.pool.Close())
	}
	if c.tempDir {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	return errors.Join(errs...)
}

// dialDirect dials a node past its proxy: the cluster's own inspection is
// neither counted nor caught by the faults tests arm.
func (c *Cluster) dialDirect(ctx context.Context, addr string) (net.Conn, error) {
	for _, nd := range c.nodes {
		if nd.Addr() != addr {
			continue
		}
		nd.mu.Lock()
		addr = nd.cfg.Listen
		nd.mu.Unlock()
		break
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// meta returns a Meta client for the node at addr, reached past its proxy.
func (c *Cluster) meta(addr string) pb.DRPCMetaClient {
	return pb.NewDRPCMetaClient(c.pool.Conn(addr))
}

// tablet returns a Tablet client for the node at addr, reached past its
// proxy.
func (c *Cluster) tablet(addr string) pb.DRPCTabletClient {
	return pb.NewDRPCTabletClient(c.pool.Conn(addr))
}

// freeAddr returns a loopback address with a free TCP port (and, with udp,
// the same port free for UDP: gossip uses both).
func freeAddr(udp bool) (string, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := l.Addr().String()
		if !udp {
			l.Close()
			return addr, nil
		}
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return addr, nil
	}
	return "", errors.New("testcluster: no free loopback port for TCP and UDP")
}
