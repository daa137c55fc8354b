package metastate

import (
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// Apply applies the command data (a marshalled pb.Command) committed at
// index, appended to the Raft log at appendedAtMs (the leader's clock, the
// same on every replica). The change, the request id's result and the
// applied index are committed in one bbolt transaction.
//
//   - index at or below the applied index: nothing changes; the result
//     remembered for the command's request id, else INTERNAL "already
//     applied".
//   - a request id remembered (applied less than RequestRetention before
//     appendedAtMs): the first result; only the applied index moves.
//   - otherwise the command runs. A refusal changes nothing but is a result
//     like a success: both are remembered under the request id.
//   - data that does not decode: INTERNAL, and the applied index moves on.
//
// Apply never panics on bad input. If a commit fails the file no longer
// follows the log: Apply logs it, Err reports it, and Apply refuses every
// later command with INTERNAL until the state is reopened (Raft then replays
// from the file's applied index) or restored. The caller must not let Raft
// count those entries as applied: no snapshot may be taken while Err is set.
func (s *State) Apply(index uint64, appendedAtMs int64, data []byte) *pb.CommandResult {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if s.broken != nil {
		return failedResult(index, codeInternal, fmt.Sprintf("state machine stopped: %v", s.broken))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return failedResult(index, codeInternal, ErrClosed.Error())
	}
	cmd := &pb.Command{}
	decodeErr := proto.Unmarshal(data, cmd)
	if decodeErr != nil {
		cmd = &pb.Command{}
	}
	res, err := s.applyCommand(index, appendedAtMs, cmd, decodeErr)
	if err != nil {
		s.broken = err
		s.logger.Error("metastate: apply failed; refusing further commands", "index", index, "err", err)
		return failedResult(index, codeInternal, err.Error())
	}
	return res
}

// applyCommand is Apply's transaction. An error means nothing was
// committed.
func (s *State) applyCommand(index uint64, appendedAtMs int64, cmd *pb.Command, decodeErr error) (*pb.CommandResult, error) {
	tx, err := s.db.Begin(true)
	if err != nil {
		return nil, pkgerr.Errorf("metastate", "begin: %w", err)
	}
	defer func() {
		if tx != nil { // a later one, after a refusal; nil if that one failed to begin
			_ = tx.Rollback() // a no-op after Commit
		}
	}()

	reqID := cmd.GetRequestId()
	if res, done, err := replayedResult(tx, index, reqID); done || err != nil {
		return res, err
	}
	res, remember, err := earlierResult(tx, index, appendedAtMs, reqID, decodeErr)
	if err != nil {
		return nil, err
	}
	var update *pb.MetadataUpdate
	var edits []bucketEdit
	if res == nil {
		if tx, res, update, edits, err = s.execute(tx, index, appendedAtMs, cmd); err != nil {
			return nil, err
		}
	}
	if err := s.commitIndex(tx, index, appendedAtMs, reqID, remember, res); err != nil {
		return nil, err
	}
	if s.index != nil {
		s.index.apply(edits)
	}
	s.feed.append(index, update)
	return res, nil
}

// replayedResult answers an index at or below the applied one (Raft
// replaying its log after a restart that kept the state): the result the
// request id remembers, or a failure. done is false for a new index.
func replayedResult(tx *bolt.Tx, index uint64, reqID []byte) (res *pb.CommandResult, done bool, err error) {
	applied, err := getU64(tx.Bucket(bucketMeta), keyAppliedIndex)
	if err != nil || index > applied {
		return nil, false, err
	}
	if len(reqID) > 0 && len(reqID) <= MaxRequestIDBytes {
		e, err := getRequest(tx, reqID)
		if err != nil {
			return nil, true, err
		}
		if e != nil {
			return e.result, true, nil
		}
	}
	return failedResult(index, codeInternal,
		fmt.Sprintf("index %d already applied (applied index %d)", index, applied)), true, nil
}

// earlierResult is the result a new index gets without running its
// command: a failure for an undecodable command or an oversized request
// id, or what the same request id got before, while remembered. remember
// says the result of this index is to be remembered under its request id.
func earlierResult(tx *bolt.Tx, index uint64, appendedAtMs int64, reqID []byte, decodeErr error) (res *pb.CommandResult, remember bool, err error) {
	switch {
	case decodeErr != nil:
		return failedResult(index, codeInternal, fmt.Sprintf("undecodable command: %v", decodeErr)), false, nil
	case len(reqID) > MaxRequestIDBytes:
		return failedResult(index, codeInvalidRequest,
			fmt.Sprintf("request id of %d bytes exceeds %d", len(reqID), MaxRequestIDBytes)), false, nil
	case len(reqID) > 0:
		e, err := getRequest(tx, reqID)
		if err != nil {
			return nil, false, err
		}
		if e != nil && !expired(e.appliedAtMs, appendedAtMs) {
			return e.result, false, nil
		}
		return nil, true, nil
	}
	return nil, false, nil
}

// execute runs cmd in tx. A refused command's writes are dropped and only
// its refusal is recorded, in a fresh transaction that execute returns in
// tx's place: one transaction still commits per index.
func (s *State) execute(tx *bolt.Tx, index uint64, appendedAtMs int64, cmd *pb.Command) (*bolt.Tx, *pb.CommandResult, *pb.MetadataUpdate, []bucketEdit, error) {
	a := &applier{state: s, tx: tx, index: index, appendedAtMs: appendedAtMs}
	res, refusal, err := s.run(a, cmd)
	if err != nil {
		return tx, nil, nil, nil, err
	}
	var update *pb.MetadataUpdate
	var edits []bucketEdit
	if refusal != nil {
		if err := tx.Rollback(); err != nil {
			return tx, nil, nil, nil, pkgerr.Errorf("metastate", "rollback: %w", err)
		}
		if tx, err = s.db.Begin(true); err != nil {
			return tx, nil, nil, nil, pkgerr.Errorf("metastate", "begin: %w", err)
		}
		res = failedResult(index, refusal.Code, refusal.Msg)
	} else {
		update, edits = a.changes.update(index), a.edits
	}
	res.Index = index
	return tx, res, update, edits, nil
}

// commitIndex remembers res under the request id (when remember), prunes
// expired requests, stores index as applied and commits tx.
func (s *State) commitIndex(tx *bolt.Tx, index uint64, appendedAtMs int64, reqID []byte, remember bool, res *pb.CommandResult) error {
	if remember {
		if err := putRequest(tx, reqID, &requestEntry{appliedAtMs: appendedAtMs, index: index, result: res}); err != nil {
			return pkgerr.Errorf("metastate", "remember request: %w", err)
		}
	}
	if err := pruneRequests(tx, appendedAtMs, s.maxRequests); err != nil {
		return pkgerr.Errorf("metastate", "prune requests: %w", err)
	}
	if err := putU64(tx.Bucket(bucketMeta), keyAppliedIndex, index); err != nil {
		return pkgerr.Errorf("metastate", "store applied index: %w", err)
	}
	if s.commitFault != nil {
		if err := s.commitFault(index); err != nil {
			return pkgerr.Errorf("metastate", "commit index %d: %w", index, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return pkgerr.Errorf("metastate", "commit index %d: %w", index, err)
	}
	return nil
}

// run executes one command in a's transaction, listing what it changes in
// a.changes. A refusal, or any failure that the same command repeats on
// every replica (a panic, a write bbolt refuses), comes back as an *Error,
// and the caller discards the transaction and the changes. Corruption of
// this replica's file is err: the caller stops.
func (s *State) run(a *applier, cmd *pb.Command) (res *pb.CommandResult, refusal *Error, err error) {
	index := a.index
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("metastate: command panicked", "index", index, "panic", r, "stack", string(debug.Stack()))
			res, refusal, err = nil, errorf(codeInternal, "command at index %d panicked: %v", index, r), nil
		}
	}()
	switch op := cmd.GetOp().(type) {
	case *pb.Command_InitCluster:
		res, err = a.initCluster(op.InitCluster)
	case *pb.Command_RegisterNode:
		res, err = a.registerNode(op.RegisterNode)
	case *pb.Command_CreateDatabase:
		res, err = a.createDatabase(op.CreateDatabase)
	case *pb.Command_DropDatabase:
		res, err = a.dropDatabase(op.DropDatabase)
	case *pb.Command_CreateTable:
		res, err = a.createTable(op.CreateTable)
	case *pb.Command_DropTable:
		res, err = a.dropTable(op.DropTable)
	case *pb.Command_AlterTable:
		res, err = a.alterTable(op.AlterTable)
	case *pb.Command_CreatePartition:
		res, err = a.createPartition(op.CreatePartition)
	case *pb.Command_DropPartition:
		res, err = a.dropPartition(op.DropPartition)
	case *pb.Command_AllocateWriterId:
		res, err = a.allocateWriterID(op.AllocateWriterId)
	case *pb.Command_AdjustIsr:
		res, err = a.adjustIsr(op.AdjustIsr)
	case *pb.Command_FenceNodes:
		res, err = a.fenceNodes(op.FenceNodes)
	case *pb.Command_ElectLeaders:
		res, err = a.electLeaders(op.ElectLeaders)
	case *pb.Command_ReportDamagedReplica:
		res, err = a.reportDamagedReplica(op.ReportDamagedReplica)
	case *pb.Command_CommitRemoteLog:
		res, err = a.commitRemoteLog(op.CommitRemoteLog)
	case *pb.Command_CommitKvSnapshot:
		res, err = a.commitKVSnapshot(op.CommitKvSnapshot)
	case *pb.Command_DrainNode:
		res, err = a.drainNode(op.DrainNode)
	case *pb.Command_RemoveNode:
		res, err = a.removeNode(op.RemoveNode)
	case *pb.Command_PutUser:
		res, err = a.putUser(op.PutUser)
	case *pb.Command_DeleteUser:
		res, err = a.deleteUser(op.DeleteUser)
	case *pb.Command_AddAcls:
		res, err = a.addAcls(op.AddAcls)
	case *pb.Command_RemoveAcls:
		res, err = a.removeAcls(op.RemoveAcls)
	case *pb.Command_InitWriterKey:
		res, err = a.initWriterKey(op.InitWriterKey)
	case *pb.Command_MoveReplicas:
		res, err = a.moveReplicas(op.MoveReplicas)
	case *pb.Command_CompleteMove:
		res, err = a.completeMove(op.CompleteMove)
	case *pb.Command_CancelMove:
		res, err = a.cancelMove(op.CancelMove)
	case *pb.Command_SetClusterSettings:
		res, err = a.setClusterSettings(op.SetClusterSettings)
	case *pb.Command_AssignLakeTasks:
		res, err = a.assignLakeTasks(op.AssignLakeTasks)
	case *pb.Command_CommitLake:
		res, err = a.commitLake(op.CommitLake)
	default:
		err = errorf(codeInvalidRequest, "command has no known operation")
	}
	switch {
	case err == nil:
		return res, nil, nil
	case errors.As(err, &refusal):
		s.logger.Debug("metastate: command refused", "index", index, "code", refusal.Code.String(), "err", refusal.Msg)
		return nil, refusal, nil
	case errors.Is(err, ErrCorrupt):
		return nil, nil, err
	default:
		s.logger.Error("metastate: command failed", "index", index, "err", err)
		return nil, errorf(codeInternal, "%v", err), nil
	}
}

// applier carries one command's transaction and Raft entry, and collects
// what the command changes for the metadata feed.
type applier struct {
	state        *State
	tx           *bolt.Tx
	index        uint64
	appendedAtMs int64
	changes      changeSet
	// edits lists the command's bucket writes for the bucket index.
	edits []bucketEdit
}

// failedResult is the result of a refused command.
func failedResult(index uint64, code pb.ErrorCode, msg string) *pb.CommandResult {
	if msg == "" {
		msg = code.String() // an empty message would read as success
	}
	return &pb.CommandResult{Code: code, Error: msg, Index: index}
}

// Err is the failure that stopped Apply (a commit that failed: the file no
// longer follows the log), or nil. While it is set, a snapshot of the file
// labelled with Raft's applied index would skip every entry Apply refused,
// so the Raft side must not take one and should stop its voter.
func (s *State) Err() error {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	return s.broken
}

// InjectCommitFault makes the commit of every index for which fault returns
// an error fail with it, as a full or failing disk would; nil removes the
// fault. For fault tests.
func (s *State) InjectCommitFault(fault func(index uint64) error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.commitFault = fault
}
