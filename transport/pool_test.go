package transport_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

func TestPoolConcurrentCalls(t *testing.T) {
	a := startNode(t, nodeOptions{})
	const calls, maxConns = 50, 8
	pool, dials := countingPool(t, transport.PoolConfig{MaxConnsPerAddr: maxConns})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))

	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			id := uint32(1000 + i)
			resp, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: id})
			if err != nil || resp.NodeId != id {
				t.Errorf("call %d: %v, %v", i, resp, err)
			}
		})
	}
	wg.Wait()
	if n := dials.MaxOpen(); n < 1 || n > maxConns {
		t.Fatalf("%d connections open at once for %d calls, want 1..%d", n, calls, maxConns)
	}

	// Sequential calls reuse the idle connections.
	before := dials.Load()
	for i := range 20 {
		if _, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: uint32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != before {
		t.Errorf("%d dials for 20 sequential calls, want none", n-before)
	}
}

func TestPoolWaitsForAConnection(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, dials := countingPool(t, transport.PoolConfig{MaxConnsPerAddr: 1})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))

	blocked := make(chan error, 1)
	go func() {
		_, err := client.Hello(t.Context(), &pb.HelloRequest{RpcAddress: "block"})
		blocked <- err
	}()
	<-a.meta.entered // the only connection is busy

	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 1)
	go func() {
		_, err := client.Hello(ctx, &pb.HelloRequest{})
		waiting <- err
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Fatalf("call waiting for a connection: %v, want context.Canceled", err)
	}

	second := make(chan error, 1)
	go func() {
		_, err := client.Hello(t.Context(), &pb.HelloRequest{})
		second <- err
	}()
	close(a.meta.release)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1 (MaxConnsPerAddr)", n)
	}
}

func TestPoolRecoversAfterServerRestart(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, dials := countingPool(t, transport.PoolConfig{})
	client := pb.NewDRPCMetaClient(pool.Conn(a.addr))
	if _, err := client.Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}

	a.stop()
	_, err := client.Hello(t.Context(), &pb.HelloRequest{})
	if !errors.Is(err, transport.ErrUnavailable) || !transport.IsRetriable(err) {
		t.Fatalf("call to a stopped server: %v, want retriable %v", err, transport.ErrUnavailable)
	}

	startNode(t, nodeOptions{addr: a.addr})
	// As callers do: retry what is retriable, a bounded number of times. The
	// connection pooled before the restart is dead; at most that call fails.
	const attempts = 3
	for i := 1; ; i++ {
		resp, err := client.Hello(t.Context(), &pb.HelloRequest{NodeId: 5})
		if err == nil && resp.NodeId == 5 {
			break
		}
		if !transport.IsRetriable(err) || i == attempts {
			t.Fatalf("attempt %d after restart: %v, %v", i, resp, err)
		}
	}
	if dials.Load() < 2 {
		t.Errorf("no new dial after the restart")
	}
}

func TestPoolClose(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, _ := countingPool(t, transport.PoolConfig{})
	conn := pool.Conn(a.addr)
	if _, err := pb.NewDRPCMetaClient(conn).Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	<-conn.Closed()
	if _, err := pb.NewDRPCMetaClient(conn).Hello(t.Context(), &pb.HelloRequest{}); !errors.Is(err, transport.ErrPoolClosed) {
		t.Fatalf("call after Close: %v, want %v", err, transport.ErrPoolClosed)
	}
}

func TestPoolDialFailureIsUnavailable(t *testing.T) {
	a := startNode(t, nodeOptions{})
	addr := a.addr
	a.stop() // nothing listens there any more
	pool, _ := countingPool(t, transport.PoolConfig{})
	_, err := pb.NewDRPCMetaClient(pool.Conn(addr)).Hello(t.Context(), &pb.HelloRequest{})
	if !errors.Is(err, transport.ErrUnavailable) || !transport.IsRetriable(err) {
		t.Fatalf("dial refused: %v, want retriable %v", err, transport.ErrUnavailable)
	}
}

// protoEncoding is the encoding generated clients use, for raw streams.
type protoEncoding struct{}

func (protoEncoding) Marshal(msg drpc.Message) ([]byte, error) {
	return proto.Marshal(msg.(proto.Message))
}

func (protoEncoding) Unmarshal(buf []byte, msg drpc.Message) error {
	return proto.Unmarshal(buf, msg.(proto.Message))
}

func TestPoolStream(t *testing.T) {
	a := startNode(t, nodeOptions{})
	pool, dials := countingPool(t, transport.PoolConfig{MaxMessageBytes: 1 << 10})
	conn := pool.Conn(a.addr)
	open := func(rpc string) drpc.Stream {
		t.Helper()
		st, err := conn.NewStream(t.Context(), rpc, protoEncoding{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	finish := func(st drpc.Stream) {
		t.Helper()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		<-st.Context().Done() // the connection is back in the pool
	}

	for i := range uint32(3) {
		st := open("/floe.v1.Meta/Hello")
		if i == 0 {
			// Too large: refused before sending, the stream goes on.
			err := st.MsgSend(&pb.HelloRequest{RpcAddress: strings.Repeat("x", 2<<10)}, protoEncoding{})
			if !errors.Is(err, transport.ErrTooLarge) {
				t.Fatalf("over-size stream message: %v, want %v", err, transport.ErrTooLarge)
			}
		}
		if err := st.MsgSend(&pb.HelloRequest{NodeId: i}, protoEncoding{}); err != nil {
			t.Fatal(err)
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var resp pb.HelloResponse
		if err := st.MsgRecv(&resp, protoEncoding{}); err != nil || resp.NodeId != i {
			t.Fatalf("stream %d: %v, %v", i, resp.NodeId, err)
		}
		if err := st.MsgRecv(&resp, protoEncoding{}); err != io.EOF {
			t.Fatalf("end of stream: %v, want io.EOF", err)
		}
		finish(st)
	}

	st := open("/floe.v1.Meta/CreateDatabase")
	if err := st.MsgSend(&pb.CreateDatabaseRequest{Name: "not-leader"}, protoEncoding{}); err != nil {
		t.Fatal(err)
	}
	var resp pb.CommandResponse
	if err := st.MsgRecv(&resp, protoEncoding{}); !errors.Is(err, transport.ErrNotLeader) {
		t.Fatalf("stream error: %v, want %v", err, transport.ErrNotLeader)
	}
	finish(st)

	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for sequential streams, want 1", n)
	}
}
