package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// startMetaNode runs a one-node cluster of a meta-only node in process and
// returns it with the channel Run's result arrives on. Tablet nodes that a
// test registers by hand stay fenced off for an hour: gossip never sees them.
func startMetaNode(t *testing.T, ctx context.Context) (*Server, <-chan error) {
	t.Helper()
	s, err := New(Config{NodeID: 1, Roles: []string{RoleMeta}, DataDir: filepath.Join(t.TempDir(), "node"),
		Listen: "127.0.0.1:0", Gossip: "127.0.0.1:0", BootstrapExpect: 1, LivenessGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("the node did not get ready")
	}
	return s, done
}
