package transport_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestListenerClosesConnectionsWithoutAProtocol(t *testing.T) {
	for _, tc := range []struct {
		name string
		send string
	}{
		{"silent", ""},
		{"partial prefix", "DRPC"},
		{"unknown prefix", "GET / HTTP/1.1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startNode(t, nodeOptions{listener: transport.ListenerConfig{HandshakeTimeout: 50 * time.Millisecond}})
			conn, err := net.Dial("tcp", a.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write([]byte(tc.send)); err != nil {
				t.Fatal(err)
			}
			readClosed(t, conn)

			// The port still serves.
			pool, _ := countingPool(t, transport.PoolConfig{})
			if _, err := pb.NewDRPCMetaClient(pool.Conn(a.addr)).Hello(t.Context(), &pb.HelloRequest{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestListenerUnclaimedRouteTimesOut(t *testing.T) {
	// Nobody accepts Raft connections on this node: one that arrives is
	// closed after the handshake timeout instead of waiting forever.
	a := startNode(t, nodeOptions{listener: transport.ListenerConfig{HandshakeTimeout: 50 * time.Millisecond}})
	conn, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(transport.RaftHeader)); err != nil {
		t.Fatal(err)
	}
	readClosed(t, conn)
}

func TestListenerCloseEndsRunAndAccept(t *testing.T) {
	lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- lis.Run(context.Background()) }()
	acceptErr := make(chan error, 2)
	for _, l := range []net.Listener{lis.DRPC(), lis.Raft()} {
		go func() {
			_, err := l.Accept()
			acceptErr <- err
		}()
	}
	// A pending connection, held open by its client, is closed by Close.
	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run after Close: %v", err)
	}
	for range 2 {
		if err := <-acceptErr; err == nil {
			t.Fatal("Accept returned a connection after Close")
		}
	}
	readClosed(t, conn)
	if err := lis.Run(context.Background()); err != nil {
		t.Fatalf("Run after Close: %v", err)
	}
}

func TestListenerCloseWithoutRun(t *testing.T) {
	lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lis.DRPC().Accept(); err == nil {
		t.Fatal("Accept after Close succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"listener", (&transport.ListenerConfig{HandshakeTimeout: -1}).Validate()},
		{"server max", (&transport.ServerConfig{MaxMessageBytes: -1}).Validate()},
		{"server idle", (&transport.ServerConfig{IdleTimeout: -1}).Validate()},
		{"pool", (&transport.PoolConfig{MaxConnsPerAddr: -1}).Validate()},
		{"pool max", (&transport.PoolConfig{MaxMessageBytes: 2 << 30}).Validate()},
	} {
		if tc.err == nil {
			t.Errorf("%s: invalid config accepted", tc.name)
		}
	}
	for _, err := range []error{
		(&transport.ListenerConfig{}).Validate(),
		(&transport.ServerConfig{}).Validate(),
		(&transport.PoolConfig{}).Validate(),
	} {
		if err != nil {
			t.Errorf("zero config refused: %v", err)
		}
	}
}

// TestDRPCAndRaftShareOnePort: DRPC calls and Raft connections arrive on
// one port, each routed to its own listener.
func TestDRPCAndRaftShareOnePort(t *testing.T) {
	a := startNode(t, nodeOptions{})
	raftRouted(t, a)
	pool, _ := countingPool(t, transport.PoolConfig{})
	resp, err := pb.NewDRPCMetaClient(pool.Conn(a.addr)).Hello(t.Context(), &pb.HelloRequest{NodeId: 7})
	if err != nil || resp.NodeId != 7 {
		t.Fatalf("hello over the same port: %v, %v", resp, err)
	}
	raftRouted(t, a) // and Raft still routed after DRPC
}
