package transport_test

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"storj.io/drpc"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
	"github.com/floedb/floe/transport/tlsconf"
	"github.com/floedb/floe/transport/tlsconf/tlstest"
)

// secureNode starts a node on a TLS port with node 1's certificate, asking
// callers for certificates as mode says, authenticating when auth is set,
// with users (name → password) able to use passwords.
func secureNode(t *testing.T, ca *tlstest.CA, mode tlsconf.ClientAuth, sec transport.Security, users map[string]string) *node {
	t.Helper()
	src := tlstest.Source(t, ca.Node(t, 1))
	cfg, err := src.ServerConfig(mode)
	if err != nil {
		t.Fatal(err)
	}
	creds := map[string]*pb.UserRecord{}
	for name, password := range users {
		rec, err := transport.ScramCredentials(name, password)
		if err != nil {
			t.Fatal(err)
		}
		creds[name] = rec
	}
	if len(users) > 0 {
		sec.Credentials = func(name string) (*pb.UserRecord, bool) { r, ok := creds[name]; return r, ok }
	}
	return startNode(t, nodeOptions{listener: transport.ListenerConfig{TLS: cfg}, server: transport.ServerConfig{Security: sec}})
}

// tlsPool returns a pool dialing with files' identity (a CA only: none).
func tlsPool(t *testing.T, files tlsconf.Files, auth func(context.Context, drpc.Conn) error) *transport.Pool {
	t.Helper()
	p := transport.NewPool(transport.PoolConfig{TLS: tlstest.Source(t, files).ClientConfig(), Authenticate: auth})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// whoami asks the node who it takes the caller for.
func whoami(t *testing.T, p *transport.Pool, addr string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	resp, err := pb.NewDRPCMetaClient(p.Conn(addr)).Hello(ctx, &pb.HelloRequest{RpcAddress: "whoami"})
	return resp.GetClusterId(), err
}

func TestTLSIdentities(t *testing.T) {
	ca := tlstest.NewCA(t, "test cluster")
	n := secureNode(t, ca, tlsconf.ClientAuthRequest, transport.Security{}, nil)
	for _, tc := range []struct {
		name  string
		files tlsconf.Files
		want  string
	}{
		{"node certificate", ca.Node(t, 2), "node:2"},
		{"user certificate", ca.User(t, "alice"), "user:alice"},
		{"no certificate", ca.Trust(), "anonymous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := whoami(t, tlsPool(t, tc.files, nil), n.addr)
			if err != nil || got != tc.want {
				t.Fatalf("whoami = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTLSMismatchSaysWhy(t *testing.T) {
	ca := tlstest.NewCA(t, "test cluster")
	secure := secureNode(t, ca, tlsconf.ClientAuthRequest, transport.Security{}, nil)
	plain := startNode(t, nodeOptions{})

	t.Run("plaintext client, TLS port", func(t *testing.T) {
		p := transport.NewPool(transport.PoolConfig{})
		defer p.Close()
		// Every call says so, not only the first: a refused connection
		// is not reused (the node closes it).
		for range 3 {
			_, err := whoami(t, p, secure.addr)
			if !errors.Is(err, transport.ErrUnauthenticated) || !strings.Contains(err.Error(), "requires TLS") {
				t.Fatalf("err = %v, want UNAUTHENTICATED saying the node requires TLS", err)
			}
		}
	})
	t.Run("TLS client, plaintext port", func(t *testing.T) {
		_, err := whoami(t, tlsPool(t, ca.Node(t, 2), nil), plain.addr)
		if !errors.Is(err, transport.ErrUnauthenticated) || !strings.Contains(err.Error(), "does not use TLS") {
			t.Fatalf("err = %v, want UNAUTHENTICATED saying the node does not use TLS", err)
		}
	})
	t.Run("certificate of another CA", func(t *testing.T) {
		other := tlstest.NewCA(t, "another cluster")
		_, err := whoami(t, tlsPool(t, other.Node(t, 2), nil), secure.addr)
		if err == nil || !strings.Contains(err.Error(), "not signed by this cluster's CA") {
			t.Fatalf("err = %v, want the node's certificate refused as another CA's", err)
		}
	})
	t.Run("client certificate of another CA, require", func(t *testing.T) {
		strict := secureNode(t, ca, tlsconf.ClientAuthRequire, transport.Security{}, nil)
		other := tlstest.NewCA(t, "another cluster")
		// The client presents another CA's certificate (and checks
		// nothing itself): the node must refuse it.
		files := other.User(t, "mallory")
		cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			t.Fatal(err)
		}
		p := transport.NewPool(transport.PoolConfig{TLS: &tls.Config{MinVersion: tls.VersionTLS13,
			Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}})
		defer p.Close()
		if _, err := whoami(t, p, strict.addr); err == nil {
			t.Fatal("a client certificate of another CA was accepted")
		}
		// Without a certificate at all, too.
		if _, err := whoami(t, tlsPool(t, ca.Trust(), nil), strict.addr); err == nil {
			t.Fatal("a client without a certificate was accepted by a port that requires one")
		}
	})
}

func TestPasswordAuthentication(t *testing.T) {
	ca := tlstest.NewCA(t, "test cluster")
	var mu sync.Mutex
	failures := map[string]int{}
	sec := transport.Security{
		Authenticate: true,
		FailureLimit: transport.FailureLimit{Burst: 3, Interval: time.Hour},
		OnAuthFailure: func(reason string) {
			mu.Lock()
			failures[reason]++
			mu.Unlock()
		},
	}
	n := secureNode(t, ca, tlsconf.ClientAuthRequest, sec, map[string]string{"alice": "s3cret"})
	login := func(user, password string) *transport.Pool {
		auth, err := transport.ScramAuthenticator(user, password)
		if err != nil {
			t.Fatal(err)
		}
		return tlsPool(t, ca.Trust(), auth)
	}

	if _, err := whoami(t, tlsPool(t, ca.Trust(), nil), n.addr); !errors.Is(err, transport.ErrUnauthenticated) {
		t.Fatalf("a call without credentials: %v, want UNAUTHENTICATED", err)
	}
	if got, err := whoami(t, login("alice", "s3cret"), n.addr); err != nil || got != "user:alice" {
		t.Fatalf("whoami with alice's password = %q, %v", got, err)
	}
	if got, err := whoami(t, tlsPool(t, ca.Node(t, 3), nil), n.addr); err != nil || got != "node:3" {
		t.Fatalf("whoami with a node certificate = %q, %v", got, err)
	}
	// A wrong password and an unknown user fail alike, without detail.
	var msgs []string
	for _, creds := range [][2]string{{"alice", "wrong"}, {"bob", "s3cret"}} {
		_, err := whoami(t, login(creds[0], creds[1]), n.addr)
		if !errors.Is(err, transport.ErrUnauthenticated) {
			t.Fatalf("%s/%s: %v, want UNAUTHENTICATED", creds[0], creds[1], err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], "authentication failed") {
		t.Fatalf("failures say %q and %q; want the same words, without detail", msgs[0], msgs[1])
	}
	// The third failure uses up the burst; then even the right password
	// waits.
	_, _ = whoami(t, login("alice", "again wrong"), n.addr)
	_, err := whoami(t, login("alice", "s3cret"), n.addr)
	if !errors.Is(err, transport.ErrUnauthenticated) || !strings.Contains(err.Error(), "too many failed authentications") {
		t.Fatalf("after the burst: %v, want the rate limit", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failures["bad_credentials"] != 3 || failures["rate_limited"] != 1 || failures["unauthenticated_call"] != 1 {
		t.Fatalf("failures reported: %v", failures)
	}
}

// recordingAuthorizer refuses node-only calls to non-nodes and records the
// requests it is asked about.
type recordingAuthorizer struct {
	mu       sync.Mutex
	requests []string
}

func (a *recordingAuthorizer) AuthorizeCall(c transport.Caller, rpc string) error {
	if rpc == "/floe.v1.Meta/Join" && !c.Principal.IsNode() {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "%s may not call %s", c.Principal, rpc)
	}
	return nil
}

func (a *recordingAuthorizer) AuthorizeRequest(_ context.Context, c transport.Caller, rpc string, req drpc.Message) error {
	hello, ok := req.(*pb.HelloRequest)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok {
		a.requests = append(a.requests, c.Principal.String()+" "+hello.GetRpcAddress())
		if hello.GetRpcAddress() == "forbidden" {
			return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_AUTHORIZED, "not that one")
		}
	}
	return nil
}

func TestAuthorizerSeesEveryCall(t *testing.T) {
	ca := tlstest.NewCA(t, "test cluster")
	authz := &recordingAuthorizer{}
	n := secureNode(t, ca, tlsconf.ClientAuthRequest, transport.Security{Authenticate: true, Authorizer: authz}, nil)
	user := tlsPool(t, ca.User(t, "alice"), nil)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	meta := pb.NewDRPCMetaClient(user.Conn(n.addr))
	if _, err := meta.Join(ctx, &pb.JoinRequest{NodeId: 9}); !errors.Is(err, transport.ErrNotAuthorized) {
		t.Fatalf("Join by a user: %v, want NOT_AUTHORIZED", err)
	}
	if _, err := meta.Hello(ctx, &pb.HelloRequest{RpcAddress: "forbidden"}); !errors.Is(err, transport.ErrNotAuthorized) {
		t.Fatalf("a refused request: %v, want NOT_AUTHORIZED", err)
	}
	if _, err := meta.Hello(ctx, &pb.HelloRequest{RpcAddress: "whoami"}); err != nil {
		t.Fatal(err)
	}
	authz.mu.Lock()
	defer authz.mu.Unlock()
	if want := []string{"user:alice forbidden", "user:alice whoami"}; strings.Join(authz.requests, ",") != strings.Join(want, ",") {
		t.Fatalf("requests seen: %q, want %q", authz.requests, want)
	}
}

func TestCertificatesReloadWithoutRestart(t *testing.T) {
	ca := tlstest.NewCA(t, "test cluster")
	client := ca.User(t, "alice")
	src := tlstest.Source(t, client)
	newPool := func() *transport.Pool {
		p := transport.NewPool(transport.PoolConfig{TLS: src.ClientConfig()})
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	n := secureNode(t, ca, tlsconf.ClientAuthRequest, transport.Security{}, nil)
	if got, err := whoami(t, newPool(), n.addr); err != nil || got != "user:alice" {
		t.Fatalf("before: %q, %v", got, err)
	}
	// The client's files now hold bob's certificate: new connections are
	// bob's once the source sees the change.
	bob := ca.User(t, "bob")
	for _, f := range [][2]string{{bob.Cert, client.Cert}, {bob.Key, client.Key}} {
		data, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1]+".tmp", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f[1]+".tmp", f[1]); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(guard)
	for {
		got, err := whoami(t, newPool(), n.addr)
		if err == nil && got == "user:bob" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %q, %v after the files changed", got, err)
		}
		time.Sleep(50 * time.Millisecond) // the source looks at its files once a second
	}
	if src.Identity().String() != "user:bob" {
		t.Fatalf("source identity %s, want user:bob", src.Identity())
	}
}
