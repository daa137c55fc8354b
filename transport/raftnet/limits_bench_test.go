package raftnet_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/raftnet"
)

// BenchmarkIdleRaftConns reports the heap a node holds per Raft connection
// that completed its handshake and sent nothing since, with hashicorp/raft's
// transport accepting (heap-B/idle-conn), with 500 of them open at once.
func BenchmarkIdleRaftConns(b *testing.B) {
	const conns = 500
	lis, err := transport.Listen("127.0.0.1:0", transport.ListenerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = lis.Run(ctx) }()
	defer lis.Close()
	layer := raftnet.NewStreamLayer(lis, raftnet.StreamConfig{ClusterID: "c1"})
	defer layer.Close()
	trans := raft.NewNetworkTransport(layer, 3, 10*time.Second, io.Discard)
	defer trans.Close()
	hello := []byte(transport.RaftHeader + "\x02c1\x00")

	var perConn float64
	for b.Loop() {
		before := heapInUse()
		open := make([]net.Conn, 0, conns)
		for range conns {
			conn, err := net.Dial("tcp", lis.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			open = append(open, conn)
			if _, err := conn.Write(hello); err != nil {
				b.Fatal(err)
			}
			ack := make([]byte, 1)
			if _, err := io.ReadFull(conn, ack); err != nil {
				b.Fatal(err)
			}
		}
		settle()
		perConn = float64(heapInUse()-before) / conns
		for _, conn := range open {
			_ = conn.Close()
		}
		settle()
	}
	b.ReportMetric(perConn, "heap-B/idle-conn")
}

// heapInUse returns the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// settle waits until the number of goroutines stops changing: the
// acceptor has taken up (or let go of) the connections.
func settle() {
	last := runtime.NumGoroutine()
	for range 200 {
		time.Sleep(10 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == last {
			return
		}
		last = n
	}
}
