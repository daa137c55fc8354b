package testcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"storj.io/drpc/drpcmigrate"
)

// Proxy is a TCP proxy in front of one node's RPC port. The node advertises
// the proxy's address, so clients and the other nodes reach it only through
// the proxy, which can refuse or cut connections, delay calls, and (for
// DRPC calls, whose frames it reads) hold, fail or rewrite chosen calls.
// Raft connections pass through untouched.
type Proxy struct {
	lis  net.Listener
	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	mu     sync.Mutex
	target string // the node's own RPC address; "" while the node is down
	refuse bool
	delay  time.Duration
	conns  map[*proxyConn]struct{}
	faults []*fault
	calls  map[Caller]map[string]int // calls seen, by caller and RPC
}

// proxyConn is one proxied connection: the caller's side and the node's.
type proxyConn struct {
	caller, node net.Conn
	closeOnce    sync.Once
	closed       chan struct{}
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		close(c.closed)
		_ = c.caller.Close()
		_ = c.node.Close()
	})
}

// newProxy listens on a loopback port; it forwards nothing until setTarget.
func newProxy() (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testcluster: proxy: %w", err)
	}
	p := &Proxy{lis: lis, done: make(chan struct{}), conns: map[*proxyConn]struct{}{}, calls: map[Caller]map[string]int{FromClients: {}, FromNodes: {}}}
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// Addr is the address callers dial.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// setTarget points the proxy at the node's RPC address ("" while it is
// down: connections are then refused).
func (p *Proxy) setTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// Refuse makes the proxy close every new connection at once (on) or accept
// them again (off).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// SetDelay makes every call wait d before it goes on to the node (0: none).
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// CutAll closes every live connection, as a network partition or a crashed
// peer would; new ones are accepted as before.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Close stops the proxy and cuts its connections.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := p.lis.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	for {
		conn, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, refuse := p.target, p.refuse
		p.mu.Unlock()
		if refuse || target == "" {
			_ = conn.Close()
			continue
		}
		p.wg.Go(func() { p.serve(conn, target) })
	}
}

// serve dials the node, passes the 8-byte protocol prefix on, and pumps
// both ways: frame by frame for DRPC, byte for byte for anything else.
func (p *Proxy) serve(caller net.Conn, target string) {
	node, err := net.Dial("tcp", target)
	if err != nil {
		_ = caller.Close()
		return
	}
	pc := &proxyConn{caller: caller, node: node, closed: make(chan struct{})}
	p.mu.Lock()
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		pc.close()
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}()
	select {
	case <-p.done: // closed while dialing: CutAll may have missed pc
		return
	default:
	}
	prefix := make([]byte, len(drpcmigrate.DRPCHeader))
	if _, err := io.ReadFull(caller, prefix); err != nil {
		return
	}
	if _, err := node.Write(prefix); err != nil {
		return
	}
	replies := make(chan struct{})
	if !bytes.Equal(prefix, []byte(drpcmigrate.DRPCHeader)) {
		go func() {
			defer close(replies)
			_, _ = io.Copy(caller, node)
			pc.close()
		}()
		_, _ = io.Copy(node, caller)
		pc.close()
		<-replies
		return
	}
	dc := newDRPCConn(p, pc)
	go func() {
		defer close(replies)
		dc.pumpReplies()
		pc.close()
	}()
	dc.pumpCalls()
	pc.close()
	<-replies
}

// errProxyClosed ends a held call when the proxy or its connection closes.
var errProxyClosed = errors.New("testcluster: proxy connection closed")
