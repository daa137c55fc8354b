package transport

import (
	"context"
	"net"
	"sync"
	"testing"
)

// pipeListener is a net.Listener whose connections are in-memory pipes:
// the fuzz targets run a real Listener through hundreds of thousands of
// connections, which over TCP would run the machine out of ports.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// dial returns the client end of a new connection.
func (p *pipeListener) dial(t testing.TB) net.Conn {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
	case <-p.done:
		t.Fatal("pipe listener closed")
	}
	return client
}

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case conn := <-p.conns:
		return conn, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeListener) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// runPipeListener starts a Listener over a pipeListener until the test or
// fuzz target ends.
func runPipeListener(tb testing.TB, cfg ListenerConfig) (*Listener, *pipeListener) {
	tb.Helper()
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	pipes := newPipeListener()
	l := newListener(pipes, cfg.withDefaults())
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
