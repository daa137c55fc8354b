package transport

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"storj.io/drpc/drpcmigrate"
)

// fuzzWait bounds each wait of the listener fuzz targets: far above what
// any step takes, so a connection left hanging fails the target instead
// of stalling it.
const fuzzWait = 10 * time.Second

// acceptAll hands every connection lis accepts to the returned channel.
func acceptAll(lis net.Listener) <-chan net.Conn {
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			conns <- conn
		}
	}()
	return conns
}

// sendAndClose writes in to conn in a goroutine of its own (a pipe's
// write waits for the reader) and then closes it.
func sendAndClose(conn net.Conn, in []byte) {
	go func() {
		_, _ = conn.Write(in)
		_ = conn.Close()
	}()
}

// readAll reads conn to its end, failing the target if that takes longer
// than fuzzWait.
func readAll(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	// A pipe whose other end closed refuses deadlines; its reads end at once.
	if err := conn.SetReadDeadline(time.Now().Add(fuzzWait)); err != nil && err != io.ErrClosedPipe {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	if err != nil && err != io.ErrClosedPipe {
		t.Fatalf("reading to the end: %v", err)
	}
	return got
}

// FuzzListenerPrefix sends any bytes as a new connection's first ones and
// checks where the connection goes: with the DRPC or the Raft prefix, to
// that protocol's listener with exactly the bytes after the prefix; with
// anything else (a short or unknown prefix), closed by the listener.
func FuzzListenerPrefix(f *testing.F) {
	f.Add([]byte(drpcmigrate.DRPCHeader + "invoke"))
	f.Add([]byte(RaftHeader + "\x02c1\x00rpc"))
	f.Add([]byte(RaftHeader))
	f.Add([]byte("DRPC!!"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{})
	lis, pipes := runPipeListener(f, ListenerConfig{})
	drpcConns, raftConns := acceptAll(lis.DRPC()), acceptAll(lis.Raft())
	f.Fuzz(func(t *testing.T, in []byte) {
		client := pipes.dial(t)
		defer client.Close()
		var route <-chan net.Conn
		switch {
		case bytes.HasPrefix(in, []byte(drpcmigrate.DRPCHeader)):
			route = drpcConns
		case bytes.HasPrefix(in, []byte(RaftHeader)):
			route = raftConns
		}
		defer waitNoPending(t, lis)
		switch {
		case route == nil && len(in) < prefixBytes:
			// The listener waits for the rest of the prefix (at most the
			// handshake timeout): the client gives up.
			sendAndClose(client, in)
			return
		case route == nil:
			// Nothing accepts it: the listener closes it.
			go func() { _, _ = client.Write(in) }()
			if got := readAll(t, client); len(got) != 0 {
				t.Fatalf("the listener answered %q", got)
			}
			return
		}
		sendAndClose(client, in)
		var conn net.Conn
		select {
		case conn = <-route:
		case <-time.After(fuzzWait):
			t.Fatalf("%q not routed", in[:prefixBytes])
		}
		defer conn.Close()
		if got := readAll(t, conn); !bytes.Equal(got, in[prefixBytes:]) {
			t.Fatalf("routed connection read %q, want %q", got, in[prefixBytes:])
		}
	})
}

// waitNoPending waits until lis holds no connection that is not yet taken
// by its protocol.
func waitNoPending(t *testing.T, lis *Listener) {
	t.Helper()
	deadline := time.Now().Add(fuzzWait)
	for lis.PendingConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still pending", lis.PendingConns())
		}
		time.Sleep(10 * time.Microsecond)
	}
}
