package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// writeCountingListener counts the writes to the connections it accepts.
type writeCountingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l writeCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return writeCountingConn{Conn: c, writes: l.writes}, nil
}

type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestUnaryReplyIsOneWrite: a unary reply and the end of its stream leave
// the server in one write.
func TestUnaryReplyIsOneWrite(t *testing.T) {
	var writes atomic.Int64
	n := startNode(t, nodeOptions{wrapDRPC: func(l net.Listener) net.Listener {
		return writeCountingListener{Listener: l, writes: &writes}
	}})
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	client := pb.NewDRPCMetaClient(pool.Conn(n.addr))
	const calls = 20
	for i := range uint32(calls) {
		if _, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes.Load(); got != calls {
		t.Fatalf("the server wrote %d times for %d unary calls, want one write per call", got, calls)
	}
}

// TestStreamSendsEachMessage: a streaming handler's messages reach the
// caller as it sends them, not when it returns.
func TestStreamSendsEachMessage(t *testing.T) {
	n := startNode(t, nodeOptions{})
	n.meta.watchGate = make(chan struct{})
	pool := transport.NewPool(transport.PoolConfig{})
	defer pool.Close()
	client := pb.NewDRPCMetaClient(pool.Conn(n.addr))
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	stream, err := client.WatchMetadata(ctx, &pb.WatchMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	u, err := stream.Recv() // the handler waits for the gate meanwhile
	if err != nil || u.Index != 1 {
		t.Fatalf("first update %v, %v", u, err)
	}
	close(n.meta.watchGate)
	if u, err := stream.Recv(); err != nil || u.Index != 2 {
		t.Fatalf("second update %v, %v", u, err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last update: %v, want io.EOF", err)
	}
}
