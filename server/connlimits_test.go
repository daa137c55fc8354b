package server

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmigrate"
	"storj.io/drpc/drpcwire"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// TestConnectionLimitsReachTheTransport: --max-rpc-conns and
// --rpc-message-timeout (Config.MaxRPCConns, Config.MessageTimeout) bound
// the node's port.
func TestConnectionLimitsReachTheTransport(t *testing.T) {
	s := readyMetaNode(t, func(c *Config) { c.MaxRPCConns = 1 })

	// Two connections held open: one of them is refused, naming the flag.
	var refusals []error
	for range 2 {
		raw, err := drpcmigrate.DialWithHeader(t.Context(), "tcp", s.Addr(), drpcmigrate.DRPCHeader)
		if err != nil {
			t.Fatal(err)
		}
		conn := drpcconn.New(raw)
		defer conn.Close()
		_, err = pb.NewDRPCMetaClient(conn).Hello(t.Context(), &pb.HelloRequest{})
		if err = transport.FromWire(err); errors.Is(err, transport.ErrUnavailable) && strings.Contains(err.Error(), "--max-rpc-conns") {
			refusals = append(refusals, err)
		}
	}
	if len(refusals) != 1 {
		t.Fatalf("%d of 2 connections refused for --max-rpc-conns 1, want 1", len(refusals))
	}

	// A request stalled halfway is cut off after the message timeout (the
	// default, 30 s, would outlast the read below).
	s = readyMetaNode(t, func(c *Config) { c.MessageTimeout = 50 * time.Millisecond })
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg := []byte(drpcmigrate.DRPCHeader)
	msg = drpcwire.AppendFrame(msg, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 1}, Kind: drpcwire.KindInvoke, Data: []byte("/floe.v1.Meta/Hello"), Done: true})
	msg = drpcwire.AppendFrame(msg, drpcwire.Frame{ID: drpcwire.ID{Stream: 1, Message: 2}, Kind: drpcwire.KindMessage, Data: []byte{0}})
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	for {
		if _, err = conn.Read(buf); err != nil {
			break
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("a stalled request still held its connection after 10 s")
	}
}

// readyMetaNode runs a one-node cluster of a meta-only node, its config
// changed by with, until the test ends.
func readyMetaNode(t *testing.T, with func(*Config)) *Server {
	t.Helper()
	cfg := Config{NodeID: 1, Roles: []string{RoleMeta}, DataDir: t.TempDir(), Listen: "127.0.0.1:0",
		Gossip: "127.0.0.1:0", BootstrapExpect: 1, LivenessGrace: time.Hour}
	with(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runNode(t, s)
	select {
	case <-s.Ready():
	case <-t.Context().Done():
		t.Fatal("the node did not get ready")
	}
	return s
}
