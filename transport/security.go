package transport

import (
	"context"
	"net"
	"net/netip"
	"sync"

	"storj.io/drpc"

	"github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
)

// Security is who may call a Server. Every call passes the Server's handler
// (handler.go), which applies it in this order:
//
//  1. Authentication (Authenticate): the call's principal is its
//     connection's, from the client certificate verified in the TLS
//     handshake, or from an Auth.Authenticate exchange (SCRAM-SHA-256,
//     auth.go) on the connection. A call with none is refused with
//     UNAUTHENTICATED, Auth's own excepted.
//  2. Authorization before the request is read (Authorizer.AuthorizeCall):
//     the RPCs only nodes may make are refused to anybody else.
//  3. Authorization of each request message, decoded
//     (Authorizer.AuthorizeRequest): the resource the request names
//     (cluster, database, table) and the operation the RPC is, against the
//     ACLs. A stream's every message is checked, so a write stream cannot
//     be opened on one table and used on another.
//
// The zero Security serves every call (a plaintext cluster, floe dev).
type Security struct {
	// Authenticate requires a principal of every call. Needs a TLS port
	// that asks for certificates (nodes are known by theirs).
	Authenticate bool
	// Credentials returns a user's SCRAM-SHA-256 credentials, false when
	// there is no such user. nil: passwords are not accepted (callers
	// need certificates).
	Credentials func(user string) (*pb.UserRecord, bool)
	// Authorizer decides calls once their caller is known. nil: every
	// authenticated caller may make every call.
	Authorizer Authorizer
	// FailureLimit bounds failed authentications per caller address
	// (failurelimit.go); zero fields take its defaults.
	FailureLimit FailureLimit
	// OnAuthFailure is told of every failed authentication (metrics);
	// reason is "bad_credentials", "rate_limited", "unauthenticated_call"
	// or "bad_certificate". nil: none.
	OnAuthFailure func(reason string)
}

// Authorizer decides whether a caller may make a call. Its errors reach the
// caller as they are: an *Error with NOT_AUTHORIZED (or UNKNOWN_TABLE, for
// a table the node does not know yet), naming the principal, operation and
// resource.
type Authorizer interface {
	// AuthorizeCall is asked when a call starts, before its request is
	// read.
	AuthorizeCall(c Caller, rpc string) error
	// AuthorizeRequest is asked with every request message of the call,
	// decoded, before the handler sees it.
	AuthorizeRequest(ctx context.Context, c Caller, rpc string, req drpc.Message) error
}

// Caller is who makes a call, and from where.
type Caller struct {
	Principal identity.Principal
	// Addr is the caller's IP address; invalid when unknown (an
	// in-memory connection).
	Addr netip.Addr
}

// CallerFrom returns the caller of the call ctx belongs to, as far as the
// Server knows it: Anonymous on a server without authentication.
func CallerFrom(ctx context.Context) Caller {
	if p, ok := ctx.Value(peerKey{}).(*peer); ok {
		return p.caller()
	}
	return Caller{}
}

// WithCaller returns ctx as a call by c would carry it: for tests of
// handlers, and for code that runs a handler on behalf of a caller.
func WithCaller(ctx context.Context, c Caller) context.Context {
	p := &peer{addr: c.Addr}
	p.principal = c.Principal
	return context.WithValue(ctx, peerKey{}, p)
}

// peerKey is the context key of a served connection's peer.
type peerKey struct{}

// peer is the other end of a served connection: who it has proven to be.
type peer struct {
	addr netip.Addr

	mu        sync.Mutex
	principal identity.Principal
}

func (p *peer) caller() Caller {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Caller{Principal: p.principal, Addr: p.addr}
}

func (p *peer) setPrincipal(pr identity.Principal) {
	p.mu.Lock()
	p.principal = pr
	p.mu.Unlock()
}

// newPeer returns the peer of conn: its address, and the principal of its
// verified client certificate, if it sent one.
func newPeer(conn net.Conn) (*peer, error) {
	p := &peer{}
	if tcp, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(tcp.IP); ok {
			p.addr = a.Unmap()
		}
	}
	for {
		if s, ok := conn.(TLSState); ok {
			pr, err := tlsconf.PeerIdentity(s.ConnectionState())
			if err != nil {
				return p, err
			}
			p.principal = pr
			return p, nil
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return p, nil
		}
		conn = w.NetConn()
	}
}

// authRPC is the RPC that proves who a caller is; the only one served
// before.
const authRPC = "/floe.v1.Auth/Authenticate"

// errUnauthenticated refuses a call whose caller has not proven who it is.
var errUnauthenticated = Errorf(pb.ErrorCode_ERROR_CODE_UNAUTHENTICATED,
	"this node requires authentication: a client certificate of the cluster's CA, or a user name and password")
