package raftnet_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/tlsconf"
	"github.com/floedb/floe/transport/tlsconf/tlstest"
)

// tlsNode starts a node whose port and Raft use files' certificate.
func tlsNode(t *testing.T, files tlsconf.Files, logs *logBuffer) *node {
	t.Helper()
	src := tlstest.Source(t, files)
	server, err := src.ServerConfig(tlsconf.ClientAuthRequest)
	if err != nil {
		t.Fatal(err)
	}
	lc := transport.ListenerConfig{TLS: server}
	if logs != nil {
		lc.Logger = logs.Logger()
	}
	return startNode(t, nodeOptions{clusterID: "c1", listener: lc, tls: src.ClientConfig()})
}

func TestRaftOverTLSSpeaksOnlyToNodes(t *testing.T) {
	ca := tlstest.NewCA(t, "c1")
	var logs logBuffer
	a := tlsNode(t, ca.Node(t, 1), &logs)
	b := tlsNode(t, ca.Node(t, 2), nil)
	exchange(t, b.raft, a.raft, a.addr)

	t.Run("plaintext dialer", func(t *testing.T) {
		plain := startNode(t, nodeOptions{clusterID: "c1"})
		_, err := plain.raft.Dial(raft.ServerAddress(a.addr), guard)
		if err == nil || !strings.Contains(err.Error(), "requires TLS") {
			t.Fatalf("dial = %v, want refused: the peer requires TLS", err)
		}
	})
	t.Run("user certificate", func(t *testing.T) {
		user := tlsNode(t, ca.User(t, "mallory"), nil)
		if conn, err := user.raft.Dial(raft.ServerAddress(a.addr), guard); err == nil {
			// The handshake answer never comes: the node closes.
			conn.Close()
			t.Fatal("a user certificate got a Raft connection")
		}
		waitFor(t, "the refusal in the log", func() bool {
			return strings.Contains(logs.String(), "Raft accepts only nodes")
		})
	})
	t.Run("another CA's node", func(t *testing.T) {
		other := tlstest.NewCA(t, "c1 impostor")
		impostor := tlsNode(t, other.Node(t, 3), nil)
		if conn, err := impostor.raft.Dial(raft.ServerAddress(a.addr), guard); err == nil {
			conn.Close()
			t.Fatal("a node certificate of another CA got a Raft connection")
		}
	})
	t.Run("TLS dialer, plaintext node", func(t *testing.T) {
		plain := startNode(t, nodeOptions{clusterID: "c1"})
		_, err := b.raft.Dial(raft.ServerAddress(plain.addr), guard)
		if err == nil || !strings.Contains(err.Error(), "does not use TLS") {
			t.Fatalf("dial = %v, want: the peer does not use TLS", err)
		}
	})
}
