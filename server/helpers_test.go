package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// startMetaNode runs a one-node cluster of a meta-only node in process until
// ctx ends and returns it with the channel Run's result arrives on. Tablet
// nodes that a test registers by hand stay fenced off for an hour: gossip
// never sees them. The test's cleanup stops the node and waits for Run, so
// no Raft or bbolt goroutine still writes in the data folder when the test's
// temporary folder is removed or the next test starts.
func startMetaNode(t testing.TB, ctx context.Context) (*Server, <-chan error) {
	t.Helper()
	return startNode(t, ctx, Config{NodeID: 1, Roles: []string{RoleMeta}, DataDir: filepath.Join(t.TempDir(), "node"),
		Listen: "127.0.0.1:0", Gossip: "127.0.0.1:0", BootstrapExpect: 1, LivenessGrace: time.Hour})
}

// startNode runs a node of cfg in process until ctx ends, as startMetaNode
// does, and returns it once ready.
func startNode(t testing.TB, ctx context.Context, cfg Config) (*Server, <-chan error) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1) // Run's result, whether or not the test reads it
	returned := make(chan struct{})
	go func() {
		done <- s.Run(ctx)
		close(returned)
	}()
	t.Cleanup(func() {
		stop()
		<-returned
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-ctx.Done():
		t.Fatal("the node did not get ready")
	}
	return s, done
}

// runResult is what Run returned on done, the channel startMetaNode gave; the
// test fails if ctx ends first.
func runResult(t *testing.T, ctx context.Context, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatal("Run did not return")
		return nil
	}
}
