package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/floedb/floe/server/access"
	"github.com/floedb/floe/transport"
	authid "github.com/floedb/floe/transport/identity"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
)

// The HTTP port's timeouts: a request's headers and body must arrive, and
// its answer leave, within them; a CPU profile (30 s by default) or a trace
// fits under the write timeout.
const (
	httpReadTimeout  = 30 * time.Second
	httpWriteTimeout = 90 * time.Second
	httpIdleTimeout  = 2 * time.Minute
)

// Operations the HTTP endpoints need.
const (
	opDescribe     = pb.AclOperation_ACL_OPERATION_DESCRIBE
	opClusterAdmin = pb.AclOperation_ACL_OPERATION_CLUSTER_ADMIN
)

// httpGate guards /metrics and /debug/pprof/. On a node that authenticates
// its callers, a request needs a client certificate of the cluster's CA or
// a user's password (HTTP basic authentication), and the operation on the
// cluster (describe for metrics, cluster-admin for the profiler), as the
// RPCs do. On a node that does not, the profiler answers only on loopback
// (it shows the process's internals), metrics everyone. /healthz and
// /readyz are open: load balancers and orchestrators ask them.
type httpGate struct {
	sec      *security
	failures *transport.FailureLimiter
}

func (s *Server) httpGate() *httpGate {
	return &httpGate{sec: s.sec, failures: transport.NewFailureLimiter(transport.FailureLimit{})}
}

// require serves next to callers allowed op on the cluster.
func (g *httpGate) require(op pb.AclOperation, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := remoteIP(r)
		if g.sec.authz == nil {
			if op == opClusterAdmin && !addr.IsLoopback() {
				http.Error(w, "the profiler answers on loopback only on a node without authentication (see docs/security.md)", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		p, status, why := g.authenticate(r, addr)
		if status != 0 {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
			}
			http.Error(w, why, status)
			return
		}
		if d := g.sec.authz.Policy().Check(p, addr, op, access.Cluster); !d.Allowed {
			http.Error(w, fmt.Sprintf("%s may not %s the cluster: %s", p, access.OperationName(op), d.Why), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate finds who makes request r: its verified client
// certificate, or its basic-authentication user and password.
func (g *httpGate) authenticate(r *http.Request, addr netip.Addr) (authid.Principal, int, string) {
	if r.TLS != nil {
		p, err := tlsconf.PeerIdentity(*r.TLS)
		if err == nil && !p.IsAnonymous() {
			return p, 0, ""
		}
	}
	user, password, ok := r.BasicAuth()
	if !ok {
		g.sec.authFailures.WithLabelValues("unauthenticated_call").Inc()
		return authid.Principal{}, http.StatusUnauthorized, "authentication required: a client certificate of the cluster's CA, or a user and password"
	}
	if !g.failures.Allowed(addr) {
		g.sec.authFailures.WithLabelValues("rate_limited").Inc()
		return authid.Principal{}, http.StatusTooManyRequests, "too many failed authentications from this address; wait before trying again"
	}
	rec, _ := g.sec.credentials(user)
	if !transport.VerifyPassword(rec, password) {
		g.failures.Failure(addr)
		g.sec.authFailures.WithLabelValues("bad_credentials").Inc()
		return authid.Principal{}, http.StatusUnauthorized, "authentication failed"
	}
	return authid.UserPrincipal(user), 0, ""
}

// remoteIP is the caller's address; invalid when it does not parse.
func remoteIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// redactedCmdline is pprof's cmdline with the value of every flag whose
// name says secret or password replaced: no secret is on the command line
// (floe serve refuses them there), and this keeps one that slipped in
// from showing.
func redactedCmdline(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, strings.Join(redactArgs(os.Args), "\x00"))
}

// redactArgs replaces the values of secret flags in args.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	secret := func(flag string) bool {
		name := strings.ToLower(strings.TrimLeft(flag, "-"))
		return strings.Contains(name, "secret") || strings.Contains(name, "password")
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		out[i] = a
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if name, _, ok := strings.Cut(a, "="); ok {
			if secret(name) && !strings.HasSuffix(name, "-file") {
				out[i] = name + "=REDACTED"
			}
			continue
		}
		if secret(a) && !strings.HasSuffix(a, "-file") && i+1 < len(args) {
			out[i+1] = "REDACTED"
			i++
		}
	}
	return out
}
