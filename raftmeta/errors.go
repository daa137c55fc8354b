package raftmeta

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// Error is a Raft failure with the wire code the transport sends for it.
type Error struct {
	code pb.ErrorCode
	msg  string
}

func (e *Error) Error() string { return "raftmeta: " + e.msg }

// WireCode is the error code sent to callers.
func (e *Error) WireCode() pb.ErrorCode { return e.code }

// Is matches errors of the same code, so errors.Is(err, ErrNotLeader) works
// for any not-leader error whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.code == e.code
}

var (
	// ErrNotLeader: the node is not the leader; retry on the leader.
	ErrNotLeader = &Error{pb.ErrorCode_ERROR_CODE_NOT_LEADER, "not the leader"}
	// ErrNoLeader: no leader is known (an election is running).
	ErrNoLeader = &Error{pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "no leader"}
	// ErrUnknownOutcome: leadership was lost or the wait timed out while a
	// command was in flight; it may or may not be applied. Retrying with the
	// same request id is safe.
	ErrUnknownOutcome = &Error{pb.ErrorCode_ERROR_CODE_TIMEOUT, "outcome unknown"}
	// ErrShutdown: the node is closing.
	ErrShutdown = &Error{pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "shutting down"}
	// ErrStateMachineFailed: the metadata state machine failed to commit
	// an entry (a full or failing disk), so its file no longer follows the
	// log. The voter stops (Node.Failed); a restart replays from the
	// file's applied index once the disk is fixed.
	ErrStateMachineFailed = pkgerr.New("raftmeta", "metadata state machine failed; voter stopped")
)

// wrap turns a hashicorp/raft error into a typed one.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrNotVoter):
		return &Error{ErrNotLeader.code, op + ": not the leader"}
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrAbortedByRestore):
		return &Error{ErrUnknownOutcome.code, fmt.Sprintf("%s: %v; outcome unknown", op, err)}
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return &Error{ErrUnknownOutcome.code, op + ": timed out waiting for Raft"}
	case errors.Is(err, raft.ErrRaftShutdown):
		return &Error{ErrShutdown.code, op + ": shutting down"}
	default:
		return pkgerr.Errorf("raftmeta", "%s: %w", op, err)
	}
}
