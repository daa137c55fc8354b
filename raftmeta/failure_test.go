package raftmeta

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// errDiskFull stands in for the ENOSPC a full disk gives bbolt's commit.
var errDiskFull = errors.New("no space left on device")

// failFrom makes every commit at or past index fail.
func failFrom(index uint64) func(uint64) error {
	return func(i uint64) error {
		if i >= index {
			return errDiskFull
		}
		return nil
	}
}

// TestCommitFailureStopsApply is issue 11's bug 9 at the FSM: once a commit
// failed, Raft counts later entries as applied that the file never got, so a
// snapshot then (labelled with Raft's index) would skip them forever.
func TestCommitFailureStopsApply(t *testing.T) {
	state, err := metastate.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	var stopped []error
	f := &fsm{state: state, failed: func(err error) { stopped = append(stopped, err) }}
	apply := func(index uint64, name string) *pb.CommandResult {
		data, err := proto.Marshal(createDB(name))
		if err != nil {
			t.Fatal(err)
		}
		return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(1, 0)}).(*pb.CommandResult)
	}
	if res := apply(1, "a"); metastate.ResultError(res) != nil {
		t.Fatal(res)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot of a healthy state: %v", err)
	}
	snap.Release()

	state.InjectCommitFault(failFrom(2))
	if res := apply(2, "b"); res.GetCode() != pb.ErrorCode_ERROR_CODE_INTERNAL {
		t.Fatalf("a failed commit answered %v", res)
	}
	state.InjectCommitFault(nil) // the disk is fine again: the state stays stopped
	if res := apply(3, "c"); res.GetCode() != pb.ErrorCode_ERROR_CODE_INTERNAL {
		t.Fatalf("an entry after the failure answered %v", res)
	}
	if len(stopped) == 0 || !errors.Is(stopped[0], errDiskFull) || !errors.Is(state.Err(), errDiskFull) {
		t.Fatalf("failure reported %v, state error %v", stopped, state.Err())
	}
	if state.AppliedIndex() != 1 {
		t.Fatalf("applied index %d after a failed commit", state.AppliedIndex())
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrStateMachineFailed) || !strings.Contains(err.Error(), errDiskFull.Error()) {
		t.Fatalf("snapshot while stopped: %v", err)
	}
}

// TestVoterStopsWhenCommitFails is bug 9 at the node: the voter whose state
// file failed to commit shuts Raft down and says why, and once restarted it
// applies the entry it failed on: none is skipped.
func TestVoterStopsWhenCommitFails(t *testing.T) {
	g := newGroup(t, 1)
	ctx := t.Context()
	n, _ := g.leader()
	if _, err := n.Propose(ctx, createDB("a")); err != nil {
		t.Fatal(err)
	}
	n.State().InjectCommitFault(failFrom(n.State().AppliedIndex() + 1))
	res, err := n.Propose(ctx, createDB("b"))
	if err == nil && res.GetCode() != pb.ErrorCode_ERROR_CODE_INTERNAL {
		t.Fatalf("propose on a failing disk: %v", res)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-n.Failed():
	case <-wait.Done():
		t.Fatal("the voter did not stop")
	}
	if err := n.Err(); !errors.Is(err, ErrStateMachineFailed) || !strings.Contains(err.Error(), errDiskFull.Error()) {
		t.Fatalf("Err: %v", err)
	}
	if err := n.Snapshot(ctx); err == nil {
		t.Fatal("a stopped voter took a snapshot")
	}
	n.stopping.Wait()
	if st := n.Status().State; st != "shutdown" {
		t.Fatalf("the failed voter is %s", st)
	}
	n.Close()

	g.nodes[0] = g.open(0)
	n, _ = g.leader()
	if err := n.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	if n.Err() != nil {
		t.Fatalf("the restarted voter reports %v", n.Err())
	}
	if _, err := n.State().Database("b"); err != nil {
		t.Fatalf("the entry the voter failed on was skipped: %v", err)
	}
}
