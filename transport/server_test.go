package transport_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestErrorCodesRoundTrip(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, _ := countingPool(t, transport.PoolConfig{})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	for _, tc := range []struct {
		name      string
		want      *transport.Error
		retriable bool
		text      string
	}{
		{"not-leader", transport.ErrNotLeader, true, "not leader: node 2 leads"},
		{"exists", transport.ErrAlreadyExists, false, `already exists: database "db1" exists`},
		{"wrapped", transport.ErrNotEmpty, false, "not empty: drop database db1: not empty"},
		{"fenced", transport.ErrFenced, false, "fenced: adjust isr: bucket epoch 7 is stale"},
		{"plain", transport.ErrInternal, false, "internal error: disk on fire"},
		{"deadline", transport.ErrTimeout, true, "timeout: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.CreateDatabase(t.Context(), &pb.CreateDatabaseRequest{Name: tc.name})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if transport.IsRetriable(err) != tc.retriable {
				t.Errorf("retriable %v, want %v", transport.IsRetriable(err), tc.retriable)
			}
			if err.Error() != tc.text {
				t.Errorf("text %q, want %q", err.Error(), tc.text)
			}
		})
	}
	// A failed call leaves the connection usable.
	if _, err := client.CreateDatabase(t.Context(), &pb.CreateDatabaseRequest{Name: "ok"}); err != nil {
		t.Fatal(err)
	}
}

func TestClusterMismatch(t *testing.T) {
	own := "c1"
	a := startNode(t, nodeOptions{server: transport.ServerConfig{ClusterID: func() string { return own }}})
	unknown := startNode(t, nodeOptions{})
	for _, tc := range []struct {
		name     string
		addr     string
		caller   string
		mismatch bool
	}{
		{"same cluster", a.addr, "c1", false},
		{"other cluster", a.addr, "c2", true},
		{"caller does not know", a.addr, "", false},
		{"server does not know", unknown.addr, "c2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, _ := countingPool(t, transport.PoolConfig{ClusterID: func() string { return tc.caller }})
			_, err := pb.NewDRPCMetaClient(pool.Conn(tc.addr)).Hello(t.Context(), &pb.HelloRequest{NodeId: 1})
			if tc.mismatch {
				if !errors.Is(err, transport.ErrClusterMismatch) || transport.IsRetriable(err) {
					t.Fatalf("got %v, want a non-retriable %v", err, transport.ErrClusterMismatch)
				}
				if !strings.Contains(err.Error(), `"c2"`) || !strings.Contains(err.Error(), `"c1"`) {
					t.Errorf("message does not name both clusters: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHandlerPanic(t *testing.T) {
	var logs logBuffer
	a := startNode(t, nodeOptions{server: transport.ServerConfig{Logger: logs.Logger()}})
	pool, _ := countingPool(t, transport.PoolConfig{})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	_, err := client.Hello(t.Context(), &pb.HelloRequest{RpcAddress: "panic"})
	if !errors.Is(err, transport.ErrInternal) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("got %v, want an internal error about the panic", err)
	}
	if !strings.Contains(logs.String(), "panicked") || !strings.Contains(logs.String(), "helpers_test.go") {
		t.Errorf("panic not logged with its stack:\n%s", logs.String())
	}
	for range 3 {
		if resp, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: 4}); err != nil || resp.NodeId != 4 {
			t.Fatalf("after the panic: %v, %v", resp, err)
		}
	}
}

func TestOversizeRequestRefusedByServer(t *testing.T) {
	const limit = 1 << 20
	a := startNode(t, nodeOptions{server: transport.ServerConfig{MaxMessageBytes: limit}})
	// The client allows more than the server does.
	pool, dials := countingPool(t, transport.PoolConfig{MaxMessageBytes: 8 * limit, MaxIdlePerAddr: 1, MaxConnsPerAddr: 1})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	if _, err := client.Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{limit + 1, 3 * limit} {
		big := &pb.CreateTableRequest{Schema: strings.Repeat("x", size)}
		_, err := client.CreateTable(t.Context(), big)
		if !errors.Is(err, transport.ErrTooLarge) || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("%d bytes: got %v, want %v", size, err, transport.ErrTooLarge)
		}
		if _, err := client.CreateTable(t.Context(), &pb.CreateTableRequest{Schema: "id BIGINT"}); err != nil {
			t.Fatalf("call after the refusal: %v", err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials: the refusal should leave the connection usable", n)
	}

	// A plain DRPC client, on one connection: whatever it makes of the
	// refusal, its next call works and the server is fine.
	raw, err := drpcmigrate.DialWithHeader(t.Context(), "tcp", a.addr, drpcmigrate.DRPCHeader)
	if err != nil {
		t.Fatal(err)
	}
	conn := drpcconn.New(raw)
	defer conn.Close()
	plain := pb.NewDRPCMetaClient(conn)
	if _, err := plain.CreateTable(t.Context(), &pb.CreateTableRequest{Schema: strings.Repeat("x", 2*limit)}); err == nil {
		t.Fatal("over-size request accepted")
	}
	if resp, err := plain.Hello(t.Context(), &pb.HelloRequest{NodeId: 9}); err != nil || resp.NodeId != 9 {
		t.Fatalf("same connection after the refusal: %v, %v", resp, err)
	}
}

func TestOversizeRequestRefusedByPool(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, dials := countingPool(t, transport.PoolConfig{MaxMessageBytes: 1 << 10})
	_, err := pb.NewDRPCMetaClient(pool.Conn(a.addr)).CreateTable(t.Context(), &pb.CreateTableRequest{Schema: strings.Repeat("x", 2<<10)})
	if !errors.Is(err, transport.ErrTooLarge) {
		t.Fatalf("got %v, want %v", err, transport.ErrTooLarge)
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("%d dials for a request refused locally", n)
	}
}

func TestIdleConnectionClosedByServer(t *testing.T) {
	a := startNode(t, nodeOptions{server: transport.ServerConfig{IdleTimeout: 50 * time.Millisecond}})

	// A connection that made a call, then went quiet.
	raw, err := drpcmigrate.DialWithHeader(t.Context(), "tcp", a.addr, drpcmigrate.DRPCHeader)
	if err != nil {
		t.Fatal(err)
	}
	conn := drpcconn.New(raw)
	defer conn.Close()
	if _, err := pb.NewDRPCMetaClient(conn).Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conn.Closed():
	case <-time.After(guard):
		t.Fatalf("idle connection still open after %v", guard)
	}

	// A connection that sent the prefix and nothing else.
	quiet, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if _, err := quiet.Write([]byte(drpcmigrate.DRPCHeader)); err != nil {
		t.Fatal(err)
	}
	readClosed(t, quiet)
}

func TestServeReturnsOnCancel(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, _ := countingPool(t, transport.PoolConfig{})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	// A call in progress ends when the server stops.
	errc := make(chan error, 1)
	go func() {
		_, err := client.Hello(t.Context(), &pb.HelloRequest{RpcAddress: "block"})
		errc <- err
	}()
	<-a.meta.entered
	a.stop() // waits for Serve and Run to return nil
	if err := <-errc; !transport.IsRetriable(err) {
		t.Fatalf("call cut by the server stopping: %v, want a retriable error", err)
	}
}
