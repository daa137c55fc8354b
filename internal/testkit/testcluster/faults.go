package testcluster

import (
	"slices"
	"sync"
	"time"

	"github.com/floedb/floe/transport/pb"
)

// Caller says whose calls a fault is aimed at. Nodes send their cluster id
// with every call and clients do not, which is how the proxy tells them
// apart: a fault aimed at a consumer's fetch does not land on a follower's.
type Caller int

const (
	// FromClients: calls without a cluster id (the SDK, the CLI).
	FromClients Caller = iota
	// FromNodes: calls from the other nodes (follower fetches, forwarded
	// metadata calls).
	FromNodes
)

// The RPCs tests aim faults at. The calls of a client's ordered write
// stream (RPCWrites) count as RPCProduce and RPCPutKV calls, each meeting
// the faults armed for its kind (RewriteReply excepted); the fetches of a
// follower's fetch stream (RPCFetches) count as RPCFetch calls from nodes,
// each meeting the holds and the delay.
const (
	RPCProduce      = "/floe.v1.Tablet/Produce"
	RPCPutKV        = "/floe.v1.Tablet/PutKv"
	RPCWrites       = "/floe.v1.Tablet/Writes"
	RPCFetch        = "/floe.v1.Tablet/Fetch"
	RPCFetches      = "/floe.v1.Tablet/Fetches"
	RPCLookup       = "/floe.v1.Tablet/Lookup"
	RPCPrefixLookup = "/floe.v1.Tablet/PrefixLookup"
	RPCListOffsets  = "/floe.v1.Tablet/ListOffsets"
	RPCScanRows     = "/floe.v1.Tablet/ScanRows"
	RPCPropose      = "/floe.v1.Meta/Propose"
)

// faultKind is what a fault does to the call it catches.
type faultKind int

const (
	failCall     faultKind = iota // answer code; the node never sees the call
	loseReply                     // the node serves the call; its answer is replaced by code
	holdCall                      // the call waits until released
	rewriteReply                  // the answer's message passes through a function
)

// fault is one armed fault. Faults catch calls in the order they were armed.
type fault struct {
	rpc     string
	from    Caller
	kind    faultKind
	code    pb.ErrorCode            // failCall, loseReply
	skip    int                     // calls to let through first
	left    int                     // calls still to catch; holds catch until released
	release chan struct{}           // holdCall
	rewrite func(msg []byte) []byte // rewriteReply
}

// FailCalls answers the next n client calls of rpc with code, as the node
// would refuse them; the node never sees them.
func (p *Proxy) FailCalls(rpc string, code pb.ErrorCode, n int) {
	p.arm(&fault{rpc: rpc, from: FromClients, kind: failCall, code: code, left: n})
}

// LoseReplies lets the node serve the next n client calls of rpc but
// answers the caller with code instead, as when an acknowledgement is lost
// or a leader steps down after appending.
func (p *Proxy) LoseReplies(rpc string, code pb.ErrorCode, n int) {
	p.arm(&fault{rpc: rpc, from: FromClients, kind: loseReply, code: code, left: n})
}

// FailCallsAfter lets the next skip client calls of rpc through, then
// fails n, as FailCalls: a fault in the middle of a writer's pipeline.
func (p *Proxy) FailCallsAfter(rpc string, skip int, code pb.ErrorCode, n int) {
	p.arm(&fault{rpc: rpc, from: FromClients, kind: failCall, code: code, skip: skip, left: n})
}

// LoseRepliesAfter lets the next skip client calls of rpc through, then
// loses the replies of n, as LoseReplies.
func (p *Proxy) LoseRepliesAfter(rpc string, skip int, code pb.ErrorCode, n int) {
	p.arm(&fault{rpc: rpc, from: FromClients, kind: loseReply, code: code, skip: skip, left: n})
}

// RewriteReply passes the answer to the next client call of rpc through fn
// (the marshaled response message), as a damaged wire would.
func (p *Proxy) RewriteReply(rpc string, fn func(msg []byte) []byte) {
	p.arm(&fault{rpc: rpc, from: FromClients, kind: rewriteReply, rewrite: fn, left: 1})
}

// Hold makes the calls of rpc from the given callers wait at the proxy
// until release is called (or the proxy closes). Calls that reached the
// node before stay unaffected.
func (p *Proxy) Hold(rpc string, from Caller) (release func()) {
	f := &fault{rpc: rpc, from: from, kind: holdCall, left: -1, release: make(chan struct{})}
	p.arm(f)
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.faults = slices.DeleteFunc(p.faults, func(g *fault) bool { return g == f })
			p.mu.Unlock()
			close(f.release)
		})
	}
}

// Calls is how many client calls of rpc reached the proxy, caught by a
// fault or not.
func (p *Proxy) Calls(rpc string) int { return p.CallsFrom(rpc, FromClients) }

// CallsFrom is how many calls of rpc from the given callers reached the
// proxy, caught by a fault or not.
func (p *Proxy) CallsFrom(rpc string, from Caller) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[from][rpc]
}

func (p *Proxy) arm(f *fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// callArrived counts a call and returns the fault that catches it (nil:
// none) and the delay it must wait first.
func (p *Proxy) callArrived(rpc string, from Caller) (*fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[from][rpc]++
	delay := p.delay
	for i, f := range p.faults {
		if f.rpc != rpc || f.from != from {
			continue
		}
		if f.skip > 0 {
			f.skip--
			return nil, delay
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				p.faults = slices.Delete(p.faults, i, i+1)
			}
		}
		return f, delay
	}
	return nil, delay
}
