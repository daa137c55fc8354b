package meta

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// alone is the discovery of a node that knows no other: it forms a
// cluster of one.
type alone struct{ self *pb.PeerInfo }

func (a alone) HelloAll(context.Context) []*pb.HelloResponse { return nil }
func (a alone) MetaPeers() []*pb.PeerInfo                    { return []*pb.PeerInfo{a.self} }
func (a alone) CheckCandidate(context.Context, uint32, string) error {
	return errors.New("meta test: no other node")
}

// startMeta runs the meta role of a one-node cluster, on its own listener
// and with no gossip (tablet nodes the test registers stay fenced off),
// until the test ends, and returns it once it leads and the cluster id is
// committed. The test's cleanup stops it and waits for its goroutines, so
// nothing still writes in the data folder when the temporary folder is
// removed.
func startMeta(t testing.TB, ctx context.Context) *Role {
	t.Helper()
	lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	// The listener outlives ctx, as the node's does: it closes after Raft.
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		_ = lis.Run(context.WithoutCancel(ctx))
	}()
	var wg sync.WaitGroup // the role's goroutines
	pool := transport.NewPool(transport.PoolConfig{})
	var clusterID atomic.Pointer[string]
	none := ""
	clusterID.Store(&none)
	addr := lis.Addr().String()
	r := New(Deps{
		Config:    Config{NodeID: 1, DataDir: t.TempDir(), Advertise: addr, Incarnation: NewID(), BootstrapExpect: 1},
		Listener:  lis,
		Pool:      pool,
		Peers:     alone{self: &pb.PeerInfo{NodeId: 1, RpcAddress: addr, Roles: []string{"meta"}}},
		ClusterID: func() string { return *clusterID.Load() },
		AdoptClusterID: func(id string) error {
			clusterID.Store(&id)
			return nil
		},
		Gossip: func() *gossip.Gossip { return nil },
		CallMeta: func(context.Context, func(context.Context, pb.DRPCMetaClient) error) error {
			return errors.New("meta test: no other meta node")
		},
		MaxBatchFor: func(*pb.TableRecord) int { return 1 << 20 },
		Go:          wg.Go,
		Stop:        func(err error) { t.Errorf("meta role stopped the node: %v", err) },
	})
	t.Cleanup(func() {
		stop()
		wg.Wait()
		r.Close()
		_ = lis.Close()
		<-listening
		pool.Close()
	})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := r.Node()
	pace := backoff.Backoff{Min: time.Millisecond, Max: 50 * time.Millisecond}
	for !n.IsLeader() || n.State().ClusterID() == "" {
		if !pace.Wait(ctx) {
			t.Fatal("the meta role did not lead a cluster of one")
		}
	}
	return r
}

// proposer returns a function that proposes a command on n under a fresh
// request id and fails the test unless it is applied.
func proposer(t *testing.T, ctx context.Context, n *raftmeta.Node) func(*pb.Command) *pb.CommandResult {
	return func(op *pb.Command) *pb.CommandResult {
		t.Helper()
		op.RequestId = []byte(NewID())
		res, err := n.Propose(ctx, op)
		if err != nil || res.GetError() != "" {
			t.Fatalf("%v: %v %v", op, err, res)
		}
		return res
	}
}
