package raftmeta

import (
	"io"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/raftmeta/metastate"
)

// fsm adapts the metadata state machine to raft.FSM.
type fsm struct {
	state *metastate.State
}

// Apply applies a committed command. Raft calls it in log order, one at a
// time.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return f.state.Apply(l.Index, l.AppendedAt.UnixMilli(), l.Data)
}

// Snapshot returns a snapshot that streams the state file when persisted.
// The copy may include entries applied after Raft's snapshot index: the file
// records its own applied index, and replaying entries at or below it is a
// no-op, so a newer copy is as good.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return &snapshot{state: f.state}, nil }

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
