package raftmeta

import (
	"fmt"
	"io"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/raftmeta/metastate"
)

// fsm adapts the metadata state machine to raft.FSM.
type fsm struct {
	state *metastate.State
	// failed is told, from Raft's FSM goroutine, that the state machine
	// stopped applying (metastate.State.Err).
	failed func(error)
}

// Apply applies a committed command. Raft calls it in log order, one at a
// time. Raft counts the entry as applied whatever the result, so a state
// machine that stopped applying (a failed commit) must stop this voter:
// failed is told.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	res := f.state.Apply(l.Index, l.AppendedAt.UnixMilli(), l.Data)
	if err := f.state.Err(); err != nil {
		f.failed(err)
	}
	return res
}

// Snapshot returns a snapshot that streams the state file when persisted.
// The copy may include entries applied after Raft's snapshot index: the file
// records its own applied index, and replaying entries at or below it is a
// no-op, so a newer copy is as good. An older copy is not: while the state
// machine is stopped (a failed commit), Raft's applied index runs ahead of
// the file, and a snapshot under it would skip the entries in between on
// every restart, so Snapshot fails.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.state.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateMachineFailed, err)
	}
	return &snapshot{state: f.state}, nil
}

// Restore replaces the state file with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return f.state.Restore(rc)
}

type snapshot struct {
	state *metastate.State
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.state.WriteSnapshot(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *snapshot) Release() {}
