package transport

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"storj.io/drpc/drpcmigrate"

	"github.com/floedb/floe/transport/internal/pipenet"
)

// fuzzWait bounds each wait of the listener fuzz targets: far above what
// any step takes, so a connection left hanging fails the target instead
// of stalling it.
const fuzzWait = 10 * time.Second

// FuzzListenerPrefix sends any bytes as a new connection's first ones and
// checks where the connection goes: with the DRPC or the Raft prefix, to
// that protocol's listener with exactly the bytes after the prefix; with
// anything else (a short or unknown prefix), closed by the listener, after
// a TLS protocol_version alert when the bytes start like a TLS record.
func FuzzListenerPrefix(f *testing.F) {
	f.Add([]byte(drpcmigrate.DRPCHeader + "invoke"))
	f.Add([]byte(RaftHeader + "\x02c1\x00rpc"))
	f.Add([]byte(RaftHeader))
	f.Add([]byte("DRPC!!"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"))
	f.Add([]byte{})
	lis, pipes := runPipeListener(f, ListenerConfig{})
	drpcConns, raftConns := pipenet.AcceptAll(lis.DRPC()), pipenet.AcceptAll(lis.Raft())
	f.Fuzz(func(t *testing.T, in []byte) {
		client, err := pipes.Dial()
		if err != nil {
			t.Fatal(err)
		}
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
			pipenet.SendAndClose(client, in)
			return
		case route == nil:
			// Nothing accepts it: the listener closes it, answering a TLS
			// ClientHello with an alert first.
			go func() { _, _ = client.Write(in) }()
			var want []byte
			if looksLikeTLS(in) {
				want = tlsAlertProtocolVersion
			}
			if got := readAll(t, client); !bytes.Equal(got, want) {
				t.Fatalf("the listener answered %q, want %q", got, want)
			}
			return
		}
		pipenet.SendAndClose(client, in)
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

// readAll reads conn to its end, failing the target if that takes longer
// than fuzzWait.
func readAll(t *testing.T, conn net.Conn) []byte {
	t.Helper()
	got, err := pipenet.ReadAll(conn, fuzzWait)
	if err != nil {
		t.Fatalf("reading to the end: %v", err)
	}
	return got
}

// runPipeListener starts a Listener over in-memory pipes until the test or
// fuzz target ends.
func runPipeListener(tb testing.TB, cfg ListenerConfig) (*Listener, *pipenet.Listener) {
	tb.Helper()
	pipes := pipenet.New()
	l, err := NewListener(pipes, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l.Run(ctx); err != nil {
			tb.Errorf("listener run: %v", err)
		}
	})
	tb.Cleanup(func() {
		cancel()
		_ = l.Close()
		wg.Wait()
	})
	return l, pipes
}
