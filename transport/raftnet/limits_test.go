package raftnet_test

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/transport"
)

// TestRaftSilentHandshakesDelayNoRealOne: 64 connections that send the Raft
// prefix and nothing more used to take every handshake slot until they
// timed out (10 s), and a real peer's handshake waited that long. The
// silent ones here would never time out; the real handshake must get
// through anyway, and the oldest silent one makes room.
func TestRaftSilentHandshakesDelayNoRealOne(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1", listener: transport.ListenerConfig{HandshakeTimeout: time.Hour}})
	b := startNode(t, nodeOptions{clusterID: "c1"})
	silentConns(t, a.addr, transport.RaftHeader, 64)
	waitFor(t, "64 handshakes in progress", func() bool { return a.raft.HandshakesInProgress() == 64 })

	exchange(t, b.raft, a.raft, a.addr)
	// One silent handshake (the first to arrive) made room.
	if n := a.raft.HandshakesInProgress(); n != 63 {
		t.Fatalf("%d handshakes in progress, want 63", n)
	}
}

// TestRaftIdleConnectionNeverReachesRaft: a connection that completes the
// handshake and then sends nothing is not handed to Raft (whose transport
// gives every connection a 256 KiB read buffer) and is closed after the
// handshake timeout.
func TestRaftIdleConnectionNeverReachesRaft(t *testing.T) {
	a := startNode(t, nodeOptions{clusterID: "c1", listener: transport.ListenerConfig{HandshakeTimeout: 50 * time.Millisecond}})
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			conn, err := a.raft.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()

	idle, err := net.Dial("tcp", a.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := idle.Write([]byte(transport.RaftHeader + "\x02c1\x00")); err != nil {
		t.Fatal(err)
	}
	ack := make([]byte, 1)
	if _, err := io.ReadFull(idle, ack); err != nil || ack[0] != 0x01 {
		t.Fatalf("handshake answer %x, %v", ack, err)
	}
	readClosed(t, idle)
	select {
	case conn := <-accepted:
		t.Fatalf("idle connection from %v handed to Raft", conn.RemoteAddr())
	default:
	}

	// A peer that goes on to send an RPC is handed over, its first byte
	// intact.
	b := startNode(t, nodeOptions{clusterID: "c1"})
	out, err := b.raft.Dial(raft.ServerAddress(a.addr), guard)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.Write([]byte("rpc")); err != nil {
		t.Fatal(err)
	}
	in := <-accepted
	defer in.Close()
	buf := make([]byte, 3)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "rpc" {
		t.Fatalf("Raft read %q, %v", buf, err)
	}
}

// TestRaftConnCapClosesIdlest: past MaxRaftConns, a new Raft connection
// closes the one that has read nothing for longest (not the oldest), and
// the log names the flag.
func TestRaftConnCapClosesIdlest(t *testing.T) {
	var logs logBuffer
	a := startNode(t, nodeOptions{clusterID: "c1", listener: transport.ListenerConfig{MaxRaftConns: 2, Logger: logs.Logger()}})
	b := startNode(t, nodeOptions{clusterID: "c1"})
	var outs, ins []net.Conn
	connect := func() {
		out, err := b.raft.Dial(raft.ServerAddress(a.addr), guard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = out.Close() })
		if _, err := out.Write([]byte("ab")); err != nil {
			t.Fatal(err)
		}
		in, err := a.raft.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = in.Close() })
		outs, ins = append(outs, out), append(ins, in)
	}
	connect()
	connect()
	// The first connection reads its RPC after the second arrived: the
	// second is now the idlest.
	if _, err := io.ReadFull(ins[0], make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	connect()
	readClosed(t, outs[1])
	if _, err := outs[0].Write([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(ins[0], make([]byte, 1)); err != nil {
		t.Fatalf("the busy connection was closed: %v", err)
	}
	if got := logs.String(); !strings.Contains(got, "--max-raft-conns") {
		t.Errorf("no log naming --max-raft-conns:\n%s", got)
	}
}
