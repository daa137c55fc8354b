package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport/pb"
)

// TestRunStopsWhenMetadataCommitFails: a node whose metadata state file
// fails to commit (issue 11, bug 9) stops, and Run returns why, so the
// process exits non-zero instead of serving with a voter that skips entries.
func TestRunStopsWhenMetadataCommitFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	s, done := startMetaNode(t, ctx)
	errDisk := errors.New("input/output error")
	s.meta.Node().State().InjectCommitFault(func(uint64) error { return errDisk })
	m := metaServer{Service: s.meta.Service(), s: s}
	if _, err := m.CreateDatabase(ctx, &pb.CreateDatabaseRequest{Name: "db"}); err == nil {
		t.Fatal("a database was created on a failing disk")
	}
	if err := runResult(t, ctx, done); !errors.Is(err, raftmeta.ErrStateMachineFailed) || !strings.Contains(err.Error(), errDisk.Error()) {
		t.Fatalf("Run returned %v", err)
	}
}
