package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunStopsWithTheFirstStopError: every failure the node cannot serve
// through goes to stop; Run shuts the node down and returns the first one,
// and a nil error stops nothing.
func TestRunStopsWithTheFirstStopError(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, done := startMetaNode(t, ctx)
	first, second := errors.New("first failure"), errors.New("second failure")
	s.stop(nil)
	s.stop(first)
	s.stop(second)
	if err := runResult(t, ctx, done); !errors.Is(err, first) {
		t.Fatalf("Run returned %v, want %v", err, first)
	}
}

// TestRunStopsDuringStartup: a stop while the node still waits for its
// peers (a listener that died, say) ends Run with that error instead of
// leaving the node waiting for peers that may never come.
func TestRunStopsDuringStartup(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, err := New(Config{NodeID: 1, Roles: []string{RoleMeta, RoleTablet}, DataDir: t.TempDir(),
		Listen: "127.0.0.1:0", Gossip: "127.0.0.1:0", BootstrapExpect: 3, Join: []string{"127.0.0.1:1", "127.0.0.1:2"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	failure := errors.New("listener failed")
	s.stop(failure)
	if err := runResult(t, ctx, done); !errors.Is(err, failure) {
		t.Fatalf("Run returned %v, want %v", err, failure)
	}
	select {
	case <-s.Formed():
		t.Fatal("the node formed a cluster with no peers")
	default:
	}
}
