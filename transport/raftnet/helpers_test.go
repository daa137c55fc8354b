package raftnet_test

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/internal/conntest"
	"github.com/floedb/floe/transport/raftnet"
)

// guard bounds every wait in these tests, so a bug fails a test instead of
// hanging it. Nothing is expected to take anywhere near this long.
const guard = 20 * time.Second

// node is one test peer: a Listener whose Raft route a StreamLayer takes.
type node struct {
	addr string
	lis  *transport.Listener
	raft *raftnet.StreamLayer
}

type nodeOptions struct {
	listener  transport.ListenerConfig
	clusterID string
	// incarnation of the node and, for its dials, the incarnation expected
	// at an address.
	incarnation string
	expect      func(address string) string
	// tls: the stream layer's dial configuration (and nodes only accepted).
	tls *tls.Config
}

// startNode starts a node on a free loopback port; it stops at the end of
// the test.
func startNode(t *testing.T, opts nodeOptions) *node {
	t.Helper()
	lis, err := transport.Listen("127.0.0.1:0", opts.listener)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{addr: lis.Addr().String(), lis: lis}
	n.raft = raftnet.NewStreamLayer(lis, raftnet.StreamConfig{ClusterID: opts.clusterID,
		Incarnation: opts.incarnation, ExpectedIncarnation: opts.expect, TLS: opts.tls, NodesOnly: opts.tls != nil, Logger: opts.listener.Logger})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := lis.Run(ctx); err != nil {
			t.Errorf("listener run: %v", err)
		}
	})
	t.Cleanup(func() {
		_ = n.raft.Close()
		cancel()
		_ = lis.Close()
		wg.Wait()
	})
	return n
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
