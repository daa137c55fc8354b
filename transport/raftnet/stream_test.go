package raftnet_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/raftnet"
)

// exchange sends ping from the dialer and pong back over a Raft connection.
func exchange(t *testing.T, from, to *raftnet.StreamLayer, addr string) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := to.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			close(accepted)
			return
		}
		accepted <- conn
	}()
	out, err := from.Dial(raft.ServerAddress(addr), guard)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer out.Close()
	// Accept returns a connection once its first RPC starts arriving.
	if _, err := out.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	in, ok := <-accepted
	if !ok {
		t.FailNow()
	}
	defer in.Close()

	buf := make([]byte, 4)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("acceptor read %q, %v", buf, err)
	}
	if _, err := in.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("dialer read %q, %v", buf, err)
	}
}

func TestRaftRefusesAnotherCluster(t *testing.T) {
	var logs logBuffer
	a := startNode(t, nodeOptions{clusterID: "c1", listener: transport.ListenerConfig{Logger: logs.Logger()}})
	stranger := startNode(t, nodeOptions{clusterID: "c2"})
	friend := startNode(t, nodeOptions{clusterID: "c1"})

	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := a.raft.Accept()
		if err == nil {
			accepted <- conn
		}
	}()

	if conn, err := stranger.raft.Dial(raft.ServerAddress(a.addr), guard); err == nil {
		conn.Close()
		t.Fatal("a dial from cluster c2 got through to cluster c1")
	}
	if got := logs.String(); !strings.Contains(got, "another cluster") || !strings.Contains(got, "remote_addr=127.0.0.1:") {
		t.Errorf("no warning with the remote address in the log:\n%s", got)
	}

	conn, err := friend.raft.Dial(raft.ServerAddress(a.addr), guard)
	if err != nil {
		t.Fatalf("a dial from the same cluster: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	in := <-accepted // the first connection Accept returns is the friend's
	defer in.Close()
	if in.RemoteAddr().String() != conn.LocalAddr().String() {
		t.Fatalf("accepted %v, want the friend's %v", in.RemoteAddr(), conn.LocalAddr())
	}
}

// TestRaftRefusesDialsForAnotherIncarnation: a dialer that expects the old
// incarnation of a wiped node at an address is refused by the new one; one
// that expects the new one, or nothing in particular, gets through.
func TestRaftRefusesDialsForAnotherIncarnation(t *testing.T) {
	var logs logBuffer
	fresh := startNode(t, nodeOptions{clusterID: "c1", incarnation: "new",
		listener: transport.ListenerConfig{Logger: logs.Logger()}})
	go func() {
		for {
			conn, err := fresh.raft.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	for _, tc := range []struct {
		expect string
		ok     bool
	}{{"old", false}, {"new", true}, {"", true}} {
		dialer := startNode(t, nodeOptions{clusterID: "c1", expect: func(string) string { return tc.expect }})
		conn, err := dialer.raft.Dial(raft.ServerAddress(fresh.addr), guard)
		if (err == nil) != tc.ok {
			t.Fatalf("dial expecting incarnation %q: err %v, want ok=%v", tc.expect, err, tc.ok)
		}
		if conn != nil {
			conn.Close()
		}
	}
	if !strings.Contains(logs.String(), "earlier incarnation") {
		t.Errorf("no warning about the refused dial:\n%s", logs.String())
	}
}

func TestRaftSlowHandshakeBlocksNoOne(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1"})
	b := startNode(t, nodeOptions{clusterID: "c1"})

	// A peer that sends the prefix and then nothing, for as long as the test.
	slow, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte(transport.RaftHeader)); err != nil {
		t.Fatal(err)
	}
	exchange(t, b.raft, a.raft, a.addr)
}

func TestRaftHandshakeTimeout(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1", listener: transport.ListenerConfig{HandshakeTimeout: 50 * time.Millisecond}})
	slow, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte(transport.RaftHeader + "\x02c")); err != nil { // one byte short
		t.Fatal(err)
	}
	readClosed(t, slow)
}

func TestRaftStreamLayerClose(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1"})
	done := make(chan error, 1)
	go func() {
		_, err := a.raft.Accept()
		done <- err
	}()
	if err := a.raft.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("Accept returned a connection after Close")
	}
}

func TestRaftNetworkTransport(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1"})
	b := startNode(t, nodeOptions{clusterID: "c1"})
	ta := raft.NewNetworkTransport(a.raft, 2, guard, io.Discard)
	defer ta.Close()
	tb := raft.NewNetworkTransport(b.raft, 2, guard, io.Discard)
	defer tb.Close()

	go func() {
		select {
		case rpc := <-ta.Consumer():
			req, ok := rpc.Command.(*raft.RequestVoteRequest)
			if !ok {
				rpc.Respond(nil, io.ErrUnexpectedEOF)
				return
			}
			rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
		case <-t.Context().Done():
		}
	}()
	var resp raft.RequestVoteResponse
	if err := tb.RequestVote("a", raft.ServerAddress(a.addr), &raft.RequestVoteRequest{Term: 7}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Term != 7 || !resp.Granted {
		t.Fatalf("vote response %+v", resp)
	}
}
