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

// startCall dials a, sends the DRPC prefix and an invoke of rpc on stream 1,
// then the first half of a message of messageBytes: a client that stalls
// inside a request.
func startCall(t *testing.T, addr, rpc string, messageBytes int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	buf := []byte(drpcmigrate.DRPCHeader)
	buf = drpcwire.AppendFrame(buf, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 1}, Kind: drpcwire.KindInvoke, Data: []byte(rpc), Done: true})
	buf = drpcwire.AppendFrame(buf, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 2}, Kind: drpcwire.KindMessage, Data: make([]byte, messageBytes/2)})
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
	a := startNode(t, nodeOptions{server: transport.ServerConfig{MessageTimeout: 50 * time.Millisecond, Logger: logs.logger()}})
	for _, rpc := range []string{"/floe.v1.Meta/WatchMetadata", "/floe.v1.Meta/Hello"} {
		t.Run(rpc, func(t *testing.T) {
			conn := startCall(t, a.addr, rpc, 15<<20)
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
	readClosed(t, startCall(t, a.addr, "/floe.v1.Meta/Hello", 1<<10))
	close(a.meta.watchGate)
	if u, err := stream.Recv(); err != nil || u.Index != 2 {
		t.Fatalf("second update after the idle wait: %v, %v", u, err)
	}
}
