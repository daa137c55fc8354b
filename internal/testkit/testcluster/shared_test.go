package testcluster

import (
	"errors"
	"testing"
)

// TestSharedClosedBeforeUse: closing a shared cluster no test used starts
// nothing, and a later use is refused rather than starting one nobody closes.
func TestSharedClosedBeforeUse(t *testing.T) {
	var s Shared
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if c, err := s.Cluster(t.Context()); !errors.Is(err, ErrSharedClosed) || c != nil {
		t.Fatalf("Cluster after Close = %v, %v, want ErrSharedClosed", c, err)
	}
}
