package testcluster

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// shared is the package's one-node cluster, with table db.t.
var shared = Shared{Setup: func(ctx context.Context, c *Cluster) error {
	_, err := c.CreateTable(ctx, TableSpec{Database: "db", Name: "t", Schema: "id BIGINT NOT NULL", Buckets: 1})
	return err
}}

func TestMain(m *testing.M) {
	code := m.Run()
	_ = shared.Close()
	os.Exit(code)
}

// oneNode returns the package's one-node cluster and a table on it.
func oneNode(t *testing.T) (*Cluster, *pb.GetTableResponse) {
	t.Helper()
	c, err := shared.Cluster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := c.Table(t.Context(), "db", "t")
	if err != nil {
		t.Fatal(err)
	}
	return c, tbl
}

// viaProxy returns a Tablet client whose calls go through the node's proxy,
// as a client's would.
func viaProxy(t *testing.T, nd *Node) pb.DRPCTabletClient {
	t.Helper()
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { _ = pool.Close() })
	return pb.NewDRPCTabletClient(pool.Conn(nd.Addr()))
}

func listOffsets(ctx context.Context, tc pb.DRPCTabletClient, tbl *pb.GetTableResponse) (int64, error) {
	resp, err := tc.ListOffsets(ctx, &pb.ListOffsetsRequest{TableId: tbl.Table.Id, Spec: pb.OffsetSpec_OFFSET_SPEC_EARLIEST})
	return resp.GetOffset(), err
}

// TestFailCallsAnswersBeforeTheNode: armed failures answer the next calls
// with their code, in order, then calls pass again; every call is counted.
func TestFailCallsAnswersBeforeTheNode(t *testing.T) {
	c, tbl := oneNode(t)
	nd := c.Node(1)
	tc := viaProxy(t, nd)
	before := nd.Proxy().Calls(RPCListOffsets)
	nd.Proxy().FailCalls(RPCListOffsets, pb.ErrorCode_ERROR_CODE_NOT_LEADER, 1)
	nd.Proxy().FailCalls(RPCListOffsets, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, 1)
	if _, err := listOffsets(t.Context(), tc, tbl); !errors.Is(err, transport.ErrNotLeader) {
		t.Fatalf("first call: %v, want NOT_LEADER", err)
	}
	if _, err := listOffsets(t.Context(), tc, tbl); !errors.Is(err, transport.ErrInvalidRequest) {
		t.Fatalf("second call: %v, want INVALID_REQUEST", err)
	}
	if off, err := listOffsets(t.Context(), tc, tbl); err != nil || off != 0 {
		t.Fatalf("third call: %d, %v", off, err)
	}
	if got := nd.Proxy().Calls(RPCListOffsets) - before; got != 3 {
		t.Fatalf("%d calls counted, want 3", got)
	}
}

// TestLoseRepliesAfterTheNodeServed: the node carries out a call whose
// answer the proxy replaces with an error.
func TestLoseRepliesAfterTheNodeServed(t *testing.T) {
	c, _ := oneNode(t)
	nd := c.Node(1)
	pool := transport.NewPool(transport.PoolConfig{})
	t.Cleanup(func() { _ = pool.Close() })
	meta := pb.NewDRPCMetaClient(pool.Conn(nd.Addr()))
	const createDatabase = "/floe.v1.Meta/CreateDatabase"
	nd.Proxy().LoseReplies(createDatabase, pb.ErrorCode_ERROR_CODE_UNAVAILABLE, 1)
	_, err := meta.CreateDatabase(t.Context(), &pb.CreateDatabaseRequest{Name: "lost"})
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("CreateDatabase: %v, want UNAVAILABLE", err)
	}
	_, err = meta.CreateDatabase(t.Context(), &pb.CreateDatabaseRequest{Name: "lost"})
	if !errors.Is(err, transport.ErrAlreadyExists) {
		t.Fatalf("CreateDatabase again: %v, want ALREADY_EXISTS: the first one was carried out", err)
	}
}

// TestHoldAndCut: a held call waits until released; cutting the
// connections ends a held call with a retriable error.
func TestHoldAndCut(t *testing.T) {
	c, tbl := oneNode(t)
	nd := c.Node(1)
	tc := viaProxy(t, nd)
	release := nd.Proxy().Hold(RPCListOffsets, FromClients)
	defer release()
	before := nd.Proxy().Calls(RPCListOffsets)
	done := make(chan error, 1)
	go func() {
		_, err := listOffsets(t.Context(), tc, tbl)
		done <- err
	}()
	waitCalls(t, nd, RPCListOffsets, before+1)
	select {
	case err := <-done:
		t.Fatalf("a held call ended: %v", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("released call: %v", err)
	}

	release = nd.Proxy().Hold(RPCListOffsets, FromClients)
	defer release()
	go func() {
		_, err := listOffsets(t.Context(), tc, tbl)
		done <- err
	}()
	waitCalls(t, nd, RPCListOffsets, before+2)
	nd.Proxy().CutAll()
	if err := <-done; !transport.IsRetriable(err) {
		t.Fatalf("call on a cut connection: %v, want a retriable error", err)
	}
}

// TestRewriteReplyAndRefuse: a rewritten answer reaches the caller as
// rewritten; a refusing proxy fails calls as unavailable until it accepts
// again.
func TestRewriteReplyAndRefuse(t *testing.T) {
	c, tbl := oneNode(t)
	nd := c.Node(1)
	tc := viaProxy(t, nd)
	nd.Proxy().RewriteReply(RPCListOffsets, func(msg []byte) []byte {
		var resp pb.ListOffsetsResponse
		if err := proto.Unmarshal(msg, &resp); err != nil {
			t.Error(err)
		}
		resp.Offset = 42
		out, _ := proto.Marshal(&resp)
		return out
	})
	if off, err := listOffsets(t.Context(), tc, tbl); err != nil || off != 42 {
		t.Fatalf("rewritten answer: %d, %v; want 42", off, err)
	}
	if off, err := listOffsets(t.Context(), tc, tbl); err != nil || off != 0 {
		t.Fatalf("next answer: %d, %v; want 0", off, err)
	}
	nd.Proxy().Refuse(true)
	nd.Proxy().CutAll()
	if _, err := listOffsets(t.Context(), tc, tbl); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("call through a refusing proxy: %v, want UNAVAILABLE", err)
	}
	nd.Proxy().Refuse(false)
	if _, err := listOffsets(t.Context(), tc, tbl); err != nil {
		t.Fatalf("after refusing ended: %v", err)
	}
}

func waitCalls(t *testing.T, nd *Node, rpc string, n int) {
	t.Helper()
	err := waitUntil(t.Context(), "calls", func(context.Context) error {
		if nd.Proxy().Calls(rpc) < n {
			return ErrNotYet
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStopAndRestartMovesLeadership: a stopped node's leaderships move to
// an in-sync replica; restarted, it serves again.
func TestStopAndRestartMovesLeadership(t *testing.T) {
	start := time.Now()
	c, err := Start(t.Context(), Options{Nodes: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("three nodes started in %v", time.Since(start))
	ctx := t.Context()
	if _, err := c.CreateTable(ctx, TableSpec{Database: "db", Name: "r", Schema: "id BIGINT NOT NULL", Buckets: 1, Replication: 3}); err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(ctx, "db", "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Node(old).Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLeader(ctx, "db", "r", 0, func(l uint32) bool { return l != 0 && l != old }); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, c.Node(old)); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitServing(ctx, "db", "r"); err != nil {
		t.Fatal(err)
	}
}
