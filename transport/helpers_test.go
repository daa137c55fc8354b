package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/internal/conntest"
	"github.com/floedb/floe/transport/pb"
)

// guard bounds every wait in these tests, so a bug fails a test instead of
// hanging it. Nothing is expected to take anywhere near this long.
const guard = 20 * time.Second

// node is one test server: a Listener routing to a Server with testMeta.
// Nothing takes its Raft route unless a test does (lis.Raft()).
type node struct {
	addr string
	lis  *transport.Listener
	meta *testMeta
	stop func()
}

type nodeOptions struct {
	addr     string // default 127.0.0.1:0
	server   transport.ServerConfig
	listener transport.ListenerConfig
	// wrapDRPC, if set, wraps the listener the Server serves.
	wrapDRPC func(net.Listener) net.Listener
}

// startNode starts a node; it stops at the end of the test, or on n.stop().
func startNode(t *testing.T, opts nodeOptions) *node {
	t.Helper()
	if opts.addr == "" {
		opts.addr = "127.0.0.1:0"
	}
	lis, err := transport.Listen(opts.addr, opts.listener)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{addr: lis.Addr().String(), lis: lis, meta: newTestMeta()}
	srv := transport.NewServer(opts.server)
	if err := pb.DRPCRegisterMeta(srv.Mux(), n.meta); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := lis.Run(ctx); err != nil {
			t.Errorf("listener run: %v", err)
		}
	})
	wg.Go(func() {
		drpcLis := lis.DRPC()
		if opts.wrapDRPC != nil {
			drpcLis = opts.wrapDRPC(drpcLis)
		}
		if err := srv.Serve(ctx, drpcLis); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			cancel()
			_ = lis.Close()
			wg.Wait()
		})
	}
	t.Cleanup(n.stop)
	return n
}

// dialStats counts a pool's dials and its connections open at once.
type dialStats struct {
	dials   atomic.Int64
	mu      sync.Mutex
	open    int
	maxOpen int
}

// Load returns the number of dials.
func (s *dialStats) Load() int64 { return s.dials.Load() }

// MaxOpen returns the most connections that were open at once.
func (s *dialStats) MaxOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxOpen
}

// countedConn tells its dialStats when it closes.
type countedConn struct {
	net.Conn
	stats *dialStats
	once  sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.stats.mu.Lock()
		c.stats.open--
		c.stats.mu.Unlock()
	})
	return c.Conn.Close()
}

// countingPool returns a pool whose dials and open connections are counted.
func countingPool(t *testing.T, cfg transport.PoolConfig) (*transport.Pool, *dialStats) {
	t.Helper()
	stats := new(dialStats)
	var d net.Dialer
	cfg.Dialer = func(ctx context.Context, addr string) (net.Conn, error) {
		stats.dials.Add(1)
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		stats.mu.Lock()
		stats.open++
		stats.maxOpen = max(stats.maxOpen, stats.open)
		stats.mu.Unlock()
		return &countedConn{Conn: conn, stats: stats}, nil
	}
	p := transport.NewPool(cfg)
	t.Cleanup(func() { _ = p.Close() })
	return p, stats
}

// testMeta serves the few Meta calls the tests make.
type testMeta struct {
	entered chan struct{} // Hello("block") has started
	release chan struct{} // lets Hello("block") return
	hooked  chan struct{} // Hello("after-reply")'s hook ran
	// watchGate, when set, makes WatchMetadata send update 1, wait for
	// it to close, send update 2 and end.
	watchGate chan struct{}
}

func newTestMeta() *testMeta {
	return &testMeta{entered: make(chan struct{}, 64), release: make(chan struct{}), hooked: make(chan struct{}, 64)}
}

// Hello echoes the node id; rpc_address "panic" panics, "block" waits for
// release.
func (m *testMeta) Hello(ctx context.Context, req *pb.HelloRequest) (*pb.HelloResponse, error) {
	switch req.RpcAddress {
	case "panic":
		panic("boom")
	case "after-reply":
		// The hook spoils the reply: the caller must still get it whole.
		resp := &pb.HelloResponse{NodeId: req.NodeId, Roles: req.Roles}
		if !transport.AfterReply(ctx, func() { resp.NodeId, resp.Roles = 0, nil; m.hooked <- struct{}{} }) {
			return nil, errors.New("AfterReply refused a served call")
		}
		return resp, nil
	case "whoami":
		return &pb.HelloResponse{ClusterId: transport.CallerFrom(ctx).Principal.String()}, nil
	case "block":
		m.entered <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &pb.HelloResponse{NodeId: req.NodeId, Roles: req.Roles}, nil
}

// fencedError is another package's error that knows its wire code.
type fencedError struct{ epoch int }

func (e fencedError) Error() string          { return fmt.Sprintf("bucket epoch %d is stale", e.epoch) }
func (e fencedError) WireCode() pb.ErrorCode { return pb.ErrorCode_ERROR_CODE_FENCED }
func (m *testMeta) notServed() error {
	return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "not served in tests")
}
func (m *testMeta) Join(context.Context, *pb.JoinRequest) (*pb.JoinResponse, error) {
	return nil, m.notServed()
}

// CreateDatabase fails in the way its name says.
func (m *testMeta) CreateDatabase(_ context.Context, req *pb.CreateDatabaseRequest) (*pb.CommandResponse, error) {
	switch req.Name {
	case "not-leader":
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER, "node 2 leads")
	case "exists":
		return nil, transport.Errorf(pb.ErrorCode_ERROR_CODE_ALREADY_EXISTS, "database %q exists", "db1")
	case "wrapped":
		return nil, fmt.Errorf("drop database db1: %w", transport.ErrNotEmpty)
	case "fenced":
		return nil, fmt.Errorf("adjust isr: %w", fencedError{epoch: 7})
	case "plain":
		return nil, errors.New("disk on fire")
	case "deadline":
		return nil, context.DeadlineExceeded
	}
	return &pb.CommandResponse{}, nil
}

// CreateTable accepts anything: the oversize tests send big schemas.
func (m *testMeta) CreateTable(context.Context, *pb.CreateTableRequest) (*pb.CommandResponse, error) {
	return &pb.CommandResponse{}, nil
}

func (m *testMeta) CreatePartition(context.Context, *pb.CreatePartitionRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) CreatePartitionOnWrite(context.Context, *pb.CreatePartitionRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) DropPartition(context.Context, *pb.DropPartitionRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) ListPartitions(context.Context, *pb.ListPartitionsRequest) (*pb.ListPartitionsResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) Propose(context.Context, *pb.ProposeRequest) (*pb.ProposeResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) RaftStatus(context.Context, *pb.RaftStatusRequest) (*pb.RaftStatusResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) DropDatabase(context.Context, *pb.DropDatabaseRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) ListDatabases(context.Context, *pb.ListDatabasesRequest) (*pb.ListDatabasesResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) DropTable(context.Context, *pb.DropTableRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) AlterTable(context.Context, *pb.AlterTableRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) ListTables(context.Context, *pb.ListTablesRequest) (*pb.ListTablesResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) GetTable(context.Context, *pb.GetTableRequest) (*pb.GetTableResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) ClusterStatus(context.Context, *pb.ClusterStatusRequest) (*pb.ClusterStatusResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) AddVoter(context.Context, *pb.AddVoterRequest) (*pb.AdminResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) RemoveVoter(context.Context, *pb.RemoveVoterRequest) (*pb.AdminResponse, error) {
	return nil, m.notServed()
}
func (m *testMeta) TransferLeadership(context.Context, *pb.TransferLeadershipRequest) (*pb.AdminResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) WatchMetadata(_ *pb.WatchMetadataRequest, stream pb.DRPCMeta_WatchMetadataStream) error {
	if m.watchGate == nil {
		return m.notServed()
	}
	if err := stream.Send(&pb.MetadataUpdate{Index: 1}); err != nil {
		return err
	}
	select {
	case <-m.watchGate:
	case <-stream.Context().Done():
		return stream.Context().Err()
	}
	return stream.Send(&pb.MetadataUpdate{Index: 2})
}

func (m *testMeta) AdjustIsr(context.Context, *pb.AdjustIsrRequest) (*pb.AdjustIsrResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) CommitRemoteLog(context.Context, *pb.CommitRemoteLogRequest) (*pb.CommitRemoteLogResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) CommitLake(context.Context, *pb.CommitLakeRequest) (*pb.CommitLakeResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) CommitKVSnapshot(context.Context, *pb.CommitKVSnapshotRequest) (*pb.CommitKVSnapshotResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) AllocateWriterId(context.Context, *pb.AllocateWriterIdRequest) (*pb.AllocateWriterIdResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) ElectLeaders(context.Context, *pb.ElectLeadersRequest) (*pb.ElectLeadersResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) DrainNode(context.Context, *pb.DrainNodeRequest) (*pb.DrainNodeResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) RemoveNode(context.Context, *pb.RemoveNodeRequest) (*pb.RemoveNodeResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) BucketStatus(context.Context, *pb.BucketStatusRequest) (*pb.BucketStatusResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) MoveReplicas(context.Context, *pb.MoveReplicasRequest) (*pb.MoveReplicasResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) CancelMoves(context.Context, *pb.CancelMovesRequest) (*pb.MoveReplicasResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) MoveStatus(context.Context, *pb.MoveStatusRequest) (*pb.MoveStatusResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) Rebalance(context.Context, *pb.RebalanceRequest) (*pb.RebalanceResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) SetClusterSettings(context.Context, *pb.SetClusterSettingsRequest) (*pb.SetClusterSettingsResponse, error) {
	return nil, m.notServed()
}

// waitFor waits until cond holds, failing the test after guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, guard)
		}
		time.Sleep(time.Millisecond)
	}
}

// raftRouted checks that a connection to n starting with the Raft prefix
// reaches n's Raft listener with the bytes after the prefix. (The Raft
// handshake on top is transport/raftnet's, tested there.)
func raftRouted(t *testing.T, n *node) {
	t.Helper()
	out, err := net.Dial("tcp", n.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.Write([]byte(transport.RaftHeader + "ping")); err != nil {
		t.Fatal(err)
	}
	in, err := n.lis.Raft().Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("Raft route read %q, %v", buf, err)
	}
}

// logBuffer is a slog destination tests can read.
type logBuffer = conntest.LogBuffer

// readClosed waits until the peer closes conn (reads return an error).
func readClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	if err := conntest.ReadClosed(conn, guard); err != nil {
		t.Fatal(err)
	}
}

// silentConns opens n connections to addr that send prefix and then
// nothing; they close with the test.
func silentConns(t *testing.T, addr, prefix string, n int) []net.Conn {
	t.Helper()
	conns, err := conntest.SilentConns(addr, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, conn := range conns {
		t.Cleanup(func() { _ = conn.Close() })
	}
	return conns
}

func (m *testMeta) PutUser(context.Context, *pb.PutUserRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) DeleteUser(context.Context, *pb.DeleteUserRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) ListUsers(context.Context, *pb.ListUsersRequest) (*pb.ListUsersResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) AddAcls(context.Context, *pb.AddAclsRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) RemoveAcls(context.Context, *pb.RemoveAclsRequest) (*pb.CommandResponse, error) {
	return nil, m.notServed()
}

func (m *testMeta) ListAcls(context.Context, *pb.ListAclsRequest) (*pb.ListAclsResponse, error) {
	return nil, m.notServed()
}
