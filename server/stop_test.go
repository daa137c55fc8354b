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
