package transport

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floedb/floe/transport/tlsconf"
	"github.com/floedb/floe/transport/tlsconf/tlstest"
)

// socketWrites counts the writes that reach a connection.
type socketWrites struct {
	net.Conn
	writes atomic.Int64
}

func (c *socketWrites) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// batchedPair returns a node's batched TLS connection over a counted pipe
// and a plain tls.Client at the other end, handshaken.
func batchedPair(t *testing.T) (*batchedTLS, *socketWrites, *tls.Conn) {
	t.Helper()
	ca := tlstest.NewCA(t, "batch")
	node, err := tlstest.Source(t, ca.Node(t, 1)).ServerConfig(tlsconf.ClientAuthRequest)
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	counted := &socketWrites{Conn: a}
	srv := newBatchedTLS(counted, func(c net.Conn) *tls.Conn { return tls.Server(c, node) })
	cli := tls.Client(b, tlstest.Source(t, ca.Trust()).ClientConfig())
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	if err := cli.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return srv, counted, cli
}

// A write of many records reaches the socket in batches, not record by
// record (crypto/tls alone makes one socket write per 16 KiB record), and
// arrives intact.
func TestTLSRecordsReachTheSocketInBatches(t *testing.T) {
	srv, counted, cli := batchedPair(t)
	payload := make([]byte, 512<<10) // a 500-key lookup answer
	_, _ = rand.Read(payload)
	counted.writes.Store(0)
	wrote := make(chan error, 1)
	go func() {
		_, err := srv.Write(payload)
		wrote <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(cli, got); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("the payload arrived changed")
	}
	records := len(payload) / (16 << 10)
	most := int64(len(payload)/(recordBatchBytes-(16<<10)) + 1)
	if n := counted.writes.Load(); n > most {
		t.Fatalf("%d socket writes for %d records; batched, at most %d", n, records, most)
	}

	// the other way, and a small write after a large one, still arrive
	go func() {
		_, err := srv.Write([]byte("after"))
		wrote <- err
	}()
	small := make([]byte, 5)
	if _, err := io.ReadFull(cli, small); err != nil || string(small) != "after" {
		t.Fatalf("read %q, %v", small, err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}

// Writers at once each get their bytes out whole and in order: a write's
// records are never interleaved with another's.
func TestTLSBatchedWritersAtOnce(t *testing.T) {
	srv, _, cli := batchedPair(t)
	const writers, messages = 4, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for m := range messages {
				size := 1 + (w*7919+m*104729)%(100<<10)
				msg := make([]byte, 12+size)
				binary.BigEndian.PutUint32(msg[0:], uint32(w))
				binary.BigEndian.PutUint32(msg[4:], uint32(m))
				binary.BigEndian.PutUint32(msg[8:], uint32(size))
				for i := range size {
					msg[12+i] = byte(w + m + i)
				}
				if _, err := srv.Write(msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	next := make([]int, writers)
	for range writers * messages {
		var head [12]byte
		if _, err := io.ReadFull(cli, head[:]); err != nil {
			t.Fatal(err)
		}
		w, m, size := int(binary.BigEndian.Uint32(head[0:])), int(binary.BigEndian.Uint32(head[4:])), int(binary.BigEndian.Uint32(head[8:]))
		if w >= writers || m != next[w] {
			t.Fatalf("message %d of writer %d arrived; want message %d", m, w, next[min(w, writers-1)])
		}
		next[w]++
		body := make([]byte, size)
		if _, err := io.ReadFull(cli, body); err != nil {
			t.Fatal(err)
		}
		for i := range body {
			if body[i] != byte(w+m+i) {
				t.Fatalf("writer %d message %d: byte %d changed", w, m, i)
			}
		}
	}
	wg.Wait()
}

// A failed socket write fails the Write that sealed it, and the
// connection stays failed.
func TestTLSBatchedWriteFailure(t *testing.T) {
	srv, counted, _ := batchedPair(t)
	_ = counted.Conn.Close()
	if _, err := srv.Write(make([]byte, 100<<10)); err == nil {
		t.Fatal("a write to a closed connection succeeded")
	}
	if _, err := srv.Write([]byte("x")); err == nil {
		t.Fatal("a write after a failed one succeeded")
	}
}
