// Package conntest holds what the tests of transport and transport/raftnet
// both use to drive connections: a log they can read, silent clients and
// the wait for a peer to close. It imports no testing package; callers turn
// its errors into test failures.
package conntest

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// LogBuffer is a slog destination tests can read.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a logger writing everything, debug up, to b.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// ReadClosed waits up to wait for the peer to close conn (reads return an
// error other than a timeout).
func ReadClosed(conn net.Conn, wait time.Duration) error {
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	buf := make([]byte, 64)
	for {
		if _, err := conn.Read(buf); err != nil {
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				return fmt.Errorf("connection still open after %v", wait)
			}
			return nil
		}
	}
}

// SilentConns opens n connections to addr that send prefix and then
// nothing. On an error it closes those it opened.
func SilentConns(addr, prefix string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, 0, n)
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conns = append(conns, conn)
			_, err = conn.Write([]byte(prefix))
		}
		if err != nil {
			for _, c := range conns {
				_ = c.Close()
			}
			return nil, err
		}
	}
	return conns, nil
}
