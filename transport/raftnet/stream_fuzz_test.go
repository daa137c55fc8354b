package raftnet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/internal/pipenet"
)

// fuzzWait bounds each wait of the fuzz target: far above what any step
// takes, so a connection left hanging fails the target instead of stalling
// it.
const fuzzWait = 10 * time.Second

// helloOutcome is what an acceptor should do with the bytes a dialer sends
// after the Raft prefix: length-prefixed cluster id and incarnation, then
// the RPCs.
type helloOutcome struct {
	complete bool   // both strings arrived
	ok       bool   // complete, and for this cluster and incarnation
	rest     []byte // what follows the hello
}

func expectHello(in []byte, clusterID, incarnation string) helloOutcome {
	var fields [2]string
	for i := range fields {
		if len(in) < 1 || len(in) < 1+int(in[0]) {
			return helloOutcome{}
		}
		fields[i], in = string(in[1:1+int(in[0])]), in[1+int(in[0]):]
	}
	return helloOutcome{
		complete: true,
		ok:       fields[0] == clusterID && (fields[1] == "" || fields[1] == incarnation),
		rest:     in,
	}
}

// FuzzRaftHandshake sends any bytes after the Raft prefix and checks the
// acceptor against expectHello: it answers 0x01 only to a whole hello of
// its cluster and incarnation, hands Raft the connection only if an RPC
// follows, with exactly the bytes that follow, and holds nothing once the
// dialer is gone.
func FuzzRaftHandshake(f *testing.F) {
	f.Add([]byte("\x02c1\x00rpc"))
	f.Add([]byte("\x02c1\x02i1\x01"))
	f.Add([]byte("\x02c1\x02i0rpc"))
	f.Add([]byte("\x02c2\x00rpc"))
	f.Add([]byte("\x02c1\x00"))
	f.Add([]byte("\x02c"))
	f.Add([]byte{})
	lis, pipes := runPipeListener(f)
	layer := NewStreamLayer(lis, StreamConfig{ClusterID: "c1", Incarnation: "i1"})
	f.Cleanup(func() { _ = layer.Close() })
	accepted := pipenet.AcceptAll(layer)
	f.Fuzz(func(t *testing.T, in []byte) {
		want := expectHello(in, "c1", "i1")
		client, err := pipes.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer waitIdle(t, lis, layer)
		defer client.Close() // before waitIdle: the acceptor may wait for more
		sent := append([]byte(transport.RaftHeader), in...)
		handedOver := make(chan struct{})
		handOver := sync.OnceFunc(func() { close(handedOver) })
		defer handOver()
		switch {
		case !want.complete:
			pipenet.SendAndClose(client, sent) // the dialer gives up mid-hello
			return
		case want.ok && len(want.rest) > 0:
			// Raft reads to the end. The dialer stays until Raft has the
			// connection: a pipe whose other end closed refuses the
			// acceptor's SetDeadline, where TCP would not.
			go func() {
				_, _ = client.Write(sent)
				<-handedOver
				_ = client.Close()
			}()
		default:
			go func() { _, _ = client.Write(sent) }()
		}

		// The answer, if any: one byte.
		if err := client.SetReadDeadline(time.Now().Add(fuzzWait)); err != nil && err != io.ErrClosedPipe {
			t.Fatal(err)
		}
		ack := make([]byte, 1)
		n, err := io.ReadFull(client, ack)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("no answer and not closed")
		}
		if answered := n == 1 && ack[0] == raftHandshakeOK; answered != want.ok || (n == 1 && !answered) {
			t.Fatalf("answered %x to a hello that is ok=%v", ack[:n], want.ok)
		}
		if !want.ok || len(want.rest) == 0 {
			return
		}
		var conn net.Conn
		select {
		case conn = <-accepted:
		case <-time.After(fuzzWait):
			t.Fatal("an RPC after a good hello did not reach Raft")
		}
		defer conn.Close()
		handOver()
		got, err := pipenet.ReadAll(conn, fuzzWait)
		if err != nil {
			t.Fatalf("reading to the end: %v", err)
		}
		if !bytes.Equal(got, want.rest) {
			t.Fatalf("Raft read %q, want %q", got, want.rest)
		}
	})
}

// waitIdle waits until neither lis nor layer holds a connection in a
// handshake, then checks that none reached Raft unasked.
func waitIdle(t *testing.T, lis *transport.Listener, layer *StreamLayer) {
	t.Helper()
	deadline := time.Now().Add(fuzzWait)
	for lis.PendingConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still pending", lis.PendingConns())
		}
		time.Sleep(10 * time.Microsecond)
	}
	for layer.HandshakesInProgress() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d handshakes still in progress", layer.HandshakesInProgress())
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// runPipeListener starts a Listener over in-memory pipes until the fuzz
// target ends.
func runPipeListener(tb testing.TB) (*transport.Listener, *pipenet.Listener) {
	tb.Helper()
	pipes := pipenet.New()
	l, err := transport.NewListener(pipes, transport.ListenerConfig{})
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
