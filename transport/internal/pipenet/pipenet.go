// Package pipenet is a net.Listener whose connections are in-memory pipes,
// and the helpers the fuzz targets of transport and transport/raftnet share:
// they run a real Listener through hundreds of thousands of connections,
// which over TCP would run the machine out of ports.
package pipenet

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Listener is a net.Listener of in-memory pipes.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// New returns a Listener; Dial makes its connections.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Dial returns the client end of a new connection, once Accept has taken
// the server end.
func (p *Listener) Dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, errors.New("pipenet: listener closed")
	}
}

func (p *Listener) Accept() (net.Conn, error) {
	select {
	case conn := <-p.conns:
		return conn, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *Listener) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *Listener) Addr() net.Addr { return Addr{} }

// Addr is the address of every pipe: "pipe".
type Addr struct{}

func (Addr) Network() string { return "pipe" }
func (Addr) String() string  { return "pipe" }

// AcceptAll hands every connection lis accepts to the returned channel.
func AcceptAll(lis net.Listener) <-chan net.Conn {
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

// SendAndClose writes in to conn in a goroutine of its own (a pipe's write
// waits for the reader) and then closes it.
func SendAndClose(conn net.Conn, in []byte) {
	go func() {
		_, _ = conn.Write(in)
		_ = conn.Close()
	}()
}

// ReadAll reads conn to its end within wait.
func ReadAll(conn net.Conn, wait time.Duration) ([]byte, error) {
	// A pipe whose other end closed refuses deadlines; its reads end at once.
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil && err != io.ErrClosedPipe {
		return nil, err
	}
	got, err := io.ReadAll(conn)
	if err != nil && err != io.ErrClosedPipe {
		return got, err
	}
	return got, nil
}
