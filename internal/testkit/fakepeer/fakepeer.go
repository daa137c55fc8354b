// Package fakepeer is a loopback TCP listener that plays a peer which is not
// a Floe node (an HTTP server, a service that greets first, one that says
// nothing), for tests of how clients and nodes tell such a peer apart.
package fakepeer

import (
	"net"
	"sync"
)

// Peer accepts connections on a loopback port and runs its serve function
// on each, in its own goroutine.
type Peer struct {
	lis net.Listener
	wg  sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn
}

// Listen starts a peer. serve may leave the connection open; Close closes
// it.
func Listen(serve func(net.Conn)) (*Peer, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Peer{lis: lis}
	p.wg.Go(func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, conn)
			p.mu.Unlock()
			p.wg.Go(func() { serve(conn) })
		}
	})
	return p, nil
}

// Addr is the peer's host:port.
func (p *Peer) Addr() string { return p.lis.Addr().String() }

// Close stops accepting, closes every connection and waits for the serve
// functions to return.
func (p *Peer) Close() error {
	err := p.lis.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Answer is a serve function that waits for the client's first bytes, then
// writes answer and, with hangUp, closes the connection.
func Answer(answer string, hangUp bool) func(net.Conn) {
	return func(conn net.Conn) {
		conn.Read(make([]byte, 1))
		conn.Write([]byte(answer))
		if hangUp {
			conn.Close()
		}
	}
}

// Silent is a serve function that never answers.
func Silent(net.Conn) {}

// TB is the part of testing.TB that Start uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// Start starts a peer that runs serve, closed when the test ends, and
// returns its address.
func Start(t TB, serve func(net.Conn)) string {
	t.Helper()
	p, err := Listen(serve)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.Addr()
}
