package transport_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// startCall dials addr, sends the DRPC prefix, an invoke of rpc on stream 1
// and then part of a request message: a client that stalls inside a
// request. cut sends a frame header announcing declaredBytes and 32 KiB of
// them; otherwise a whole 32 KiB frame that is not its message's last.
func startCall(t *testing.T, addr, rpc string, cut bool, declaredBytes int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	const sent = 32 << 10
	buf := []byte(drpcmigrate.DRPCHeader)
	buf = drpcwire.AppendFrame(buf, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 1}, Kind: drpcwire.KindInvoke, Data: []byte(rpc), Done: true})
	if cut {
		buf = append(buf, byte(drpcwire.KindMessage)<<1)
		for _, v := range []uint64{1, 2, uint64(declaredBytes)} {
			buf = drpcwire.AppendVarint(buf, v)
		}
		buf = append(buf, make([]byte, sent)...)
	} else {
		buf = drpcwire.AppendFrame(buf, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 2}, Kind: drpcwire.KindMessage, Data: make([]byte, sent)})
	}
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readRefusal reads packets off conn until an error packet, and returns it
// as the error a client would see.
func readRefusal(t *testing.T, conn net.Conn) error {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	rd := drpcwire.NewReader(conn)
	for {
		pkt, err := rd.ReadPacket()
		if err != nil {
			t.Fatalf("no error packet before %v", err)
		}
		if pkt.Kind == drpcwire.KindError {
			return transport.FromWire(drpcwire.UnmarshalError(pkt.Data))
		}
	}
}

// TestHalfMessageTimesOut: a client that sends half of a request message
// and then nothing is told why and cut off after MessageTimeout, on a
// streaming call (Writes-like) as on a unary one. Before the timeout the
// connection was held forever.
func TestHalfMessageTimesOut(t *testing.T) {
	var logs logBuffer
	a := startNode(t, nodeOptions{server: transport.ServerConfig{MessageTimeout: 50 * time.Millisecond, Logger: logs.Logger()}})
	for _, tc := range []struct {
		name, rpc string
		cut       bool
	}{
		{"half a 15 MiB frame on a stream", "/floe.v1.Meta/WatchMetadata", true},
		{"a message without its last frame", "/floe.v1.Meta/Hello", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := startCall(t, a.addr, tc.rpc, tc.cut, 15<<20)
			err := readRefusal(t, conn)
			if !errors.Is(err, transport.ErrTimeout) || !strings.Contains(err.Error(), "--rpc-message-timeout") {
				t.Fatalf("got %v, want a timeout naming --rpc-message-timeout", err)
			}
			readClosed(t, conn)
		})
	}
	if !strings.Contains(logs.String(), "rpc-message-timeout") {
		t.Errorf("no log naming the flag:\n%s", logs.String())
	}
	// The server carries on.
	pool, _ := countingPool(t, transport.PoolConfig{})
	if _, err := pb.NewDRPCMetaClient(pool.Conn(a.addr)).Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}
}

// TestIdleStreamOutlivesMessageTimeout: the message timeout bounds a
// message on its way, not the wait between messages: a stream whose client
// sends nothing while the server holds it open stays open.
func TestIdleStreamOutlivesMessageTimeout(t *testing.T) {
	a := startNode(t, nodeOptions{server: transport.ServerConfig{MessageTimeout: 50 * time.Millisecond}})
	a.meta.watchGate = make(chan struct{})
	raw, err := drpcmigrate.DialWithHeader(t.Context(), "tcp", a.addr, drpcmigrate.DRPCHeader)
	if err != nil {
		t.Fatal(err)
	}
	conn := drpcconn.New(raw)
	defer conn.Close()
	stream, err := pb.NewDRPCMetaClient(conn).WatchMetadata(t.Context(), &pb.WatchMetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := stream.Recv(); err != nil || u.Index != 1 {
		t.Fatalf("first update %v, %v", u, err)
	}
	// Another client's half message is cut off: the timeout has passed
	// for the idle stream too.
	readClosed(t, startCall(t, a.addr, "/floe.v1.Meta/Hello", true, 1<<20))
	close(a.meta.watchGate)
	if u, err := stream.Recv(); err != nil || u.Index != 2 {
		t.Fatalf("second update after the idle wait: %v, %v", u, err)
	}
}

// TestDRPCConnCap: past MaxConns, a new DRPC connection's call is answered
// UNAVAILABLE naming --max-rpc-conns; once a connection closes, calls get
// through again.
func TestDRPCConnCap(t *testing.T) {
	var logs logBuffer
	a := startNode(t, nodeOptions{listener: transport.ListenerConfig{MaxConns: 2, Logger: logs.Logger()}})
	hello := func() (*drpcconn.Conn, error) {
		raw, err := drpcmigrate.DialWithHeader(t.Context(), "tcp", a.addr, drpcmigrate.DRPCHeader)
		if err != nil {
			t.Fatal(err)
		}
		conn := drpcconn.New(raw)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = pb.NewDRPCMetaClient(conn).Hello(t.Context(), &pb.HelloRequest{})
		return conn, transport.FromWire(err)
	}
	first, err := hello()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hello(); err != nil {
		t.Fatal(err)
	}
	_, err = hello()
	if !errors.Is(err, transport.ErrUnavailable) || !strings.Contains(err.Error(), "--max-rpc-conns") {
		t.Fatalf("third connection: got %v, want UNAVAILABLE naming --max-rpc-conns", err)
	}
	if !strings.Contains(logs.String(), "--max-rpc-conns") {
		t.Errorf("no log naming the flag:\n%s", logs.String())
	}
	_ = first.Close()
	waitFor(t, "a call to get through after a connection closed", func() bool {
		_, err := hello()
		return err == nil
	})
}

// TestPendingConnsCapClosesOldest: connections that send nothing, not even
// a protocol prefix, are held at most MaxPendingConns at once; a new one
// closes the oldest, and real clients of both protocols still get in.
func TestPendingConnsCapClosesOldest(t *testing.T) {
	a := startNode(t, nodeOptions{listener: transport.ListenerConfig{MaxPendingConns: 4, HandshakeTimeout: time.Hour}})
	silent := silentConns(t, a.addr, "", 4)
	waitFor(t, "4 pending connections", func() bool { return a.lis.PendingConns() == 4 })
	silentConns(t, a.addr, "", 1)
	readClosed(t, silent[0])

	pool, _ := countingPool(t, transport.PoolConfig{})
	if _, err := pb.NewDRPCMetaClient(pool.Conn(a.addr)).Hello(t.Context(), &pb.HelloRequest{}); err != nil {
		t.Fatal(err)
	}
	raftRouted(t, a)
}
