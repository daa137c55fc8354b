package raftmeta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// Server is a member of the Raft group.
type Server struct {
	ID      uint32
	Address string
	Voter   bool
}

// ServerID is the Raft server id of a node id.
func ServerID(id uint32) raft.ServerID { return raft.ServerID(strconv.FormatUint(uint64(id), 10)) }

// parseServerID reads a node id back from a Raft server id; 0 when invalid.
func parseServerID(id raft.ServerID) uint32 {
	n, err := strconv.ParseUint(string(id), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}

// Node is one voter (or non-voter) of the metadata Raft group.
type Node struct {
	cfg   Config
	raft  *raft.Raft
	state *metastate.State
	store *raftboltdb.BoltStore
	trans *raft.NetworkTransport

	// barrierTerm is the term in which this node, as leader, last completed
	// a barrier: reads need one per term to see everything committed.
	mu          sync.Mutex
	barrierTerm uint64

	// failed is closed, and failErr set, when the state machine stopped
	// applying; opened once raft is set, so the shutdown that follows never
	// sees it nil. stopping tracks that shutdown for Close.
	failOnce sync.Once
	failed   chan struct{}
	failErr  error
	opened   chan struct{}
	stopping sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Open opens the node's stores and starts Raft. A node without Raft state
// waits, as a member of nothing, until Bootstrap is called or a leader adds
// it.
func Open(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, pkgerr.Errorf("raftmeta", "%w", err)
	}
	state, err := metastate.Open(filepath.Join(cfg.Dir, "state.db"), cfg.Logger)
	if err != nil {
		return nil, err
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		state.Close()
		return nil, pkgerr.Errorf("raftmeta", "open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, snapshotsRetained, newHCLog(cfg.Logger, "snapshots"))
	if err != nil {
		store.Close()
		state.Close()
		return nil, pkgerr.Errorf("raftmeta", "snapshot store: %w", err)
	}
	logs, err := raft.NewLogCache(512, store)
	if err != nil {
		store.Close()
		state.Close()
		return nil, pkgerr.Errorf("raftmeta", "%w", err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  cfg.Stream,
		MaxPool: 3,
		Timeout: 2 * time.Second,
		Logger:  newHCLog(cfg.Logger, "raft-net"),
	})
	n := &Node{cfg: cfg, state: state, store: store, trans: trans, failed: make(chan struct{}), opened: make(chan struct{})}
	r, err := raft.NewRaft(cfg.raftConfig(), &fsm{state: state, failed: n.fail}, logs, store, snaps, trans)
	if err != nil {
		close(n.opened)
		n.stopping.Wait()
		trans.Close()
		store.Close()
		state.Close()
		return nil, pkgerr.Errorf("raftmeta", "start raft: %w", err)
	}
	n.raft = r
	close(n.opened)
	return n, nil
}

// fail stops this voter because its state machine stopped applying: Raft
// would otherwise go on counting entries as applied that the state file
// never got, and snapshot past them. Raft's FSM goroutine calls it, and
// Raft's shutdown waits for that goroutine, so the shutdown runs in one of
// its own.
func (n *Node) fail(cause error) {
	n.failOnce.Do(func() {
		n.failErr = fmt.Errorf("%w: %v", ErrStateMachineFailed, cause)
		n.cfg.Logger.Error("raftmeta: the metadata state file failed to commit an entry; stopping this voter so no entry is skipped. "+
			"Fix the disk (space, I/O errors) and restart the node: it replays the log from the file's applied index",
			"err", cause)
		close(n.failed)
		n.stopping.Add(1)
		go func() {
			defer n.stopping.Done()
			<-n.opened
			if n.raft != nil {
				if err := n.raft.Shutdown().Error(); err != nil {
					n.cfg.Logger.Warn("raftmeta: stopping the failed voter", "err", err)
				}
			}
		}()
	})
}

// Failed is closed when the node stopped its voter because the state
// machine failed to commit an entry; Err then says why. The node serves
// nothing more: its owner should stop with Err.
func (n *Node) Failed() <-chan struct{} { return n.failed }

// Err is the failure that stopped the voter (wrapping ErrStateMachineFailed),
// or nil while Failed is open.
func (n *Node) Err() error {
	select {
	case <-n.failed:
		return n.failErr
	default:
		return nil
	}
}

// HasState reports whether the node's folder holds Raft state (a term, a log
// or a snapshot) from an earlier run.
func HasState(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "raft.db"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, pkgerr.Errorf("raftmeta", "%w", err)
	}
	return true, nil
}

// Bootstrap makes this node the seed of a new group with the given voters.
// Every founding node may call it with the same list; a node that already
// has state refuses (raft.ErrCantBootstrap).
func (n *Node) Bootstrap(servers []Server) error {
	var cfg raft.Configuration
	for _, s := range servers {
		suffrage := raft.Voter
		if !s.Voter {
			suffrage = raft.Nonvoter
		}
		cfg.Servers = append(cfg.Servers, raft.Server{ID: ServerID(s.ID), Address: raft.ServerAddress(s.Address), Suffrage: suffrage})
	}
	return wrap("bootstrap", n.raft.BootstrapCluster(cfg).Error())
}

// State is the metadata state machine, for reads.
func (n *Node) State() *metastate.State { return n.state }

// Propose replicates a command and returns its result once applied here. It
// must run on the leader (ErrNotLeader otherwise: forward it). When the
// outcome cannot be known (ErrUnknownOutcome) the caller retries with the
// same request id.
func (n *Node) Propose(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	if res := metastate.Precheck(cmd); res != nil {
		return res, nil // decided without the log: nothing invalid is logged
	}
	data, err := proto.Marshal(cmd)
	if err != nil {
		return nil, pkgerr.Errorf("raftmeta", "encode command: %w", err)
	}
	if n.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	f := n.raft.Apply(data, timeoutFrom(ctx))
	if err := waitFuture(ctx, "propose", f); err != nil {
		return nil, err
	}
	res, ok := f.Response().(*pb.CommandResult)
	if !ok || res == nil {
		return nil, pkgerr.Errorf("raftmeta", "state machine returned %T", f.Response())
	}
	return res, nil
}

// LinearizableRead returns once this node may answer reads that reflect every
// write committed before the call: it is the leader (confirmed by a quorum)
// and has applied everything committed in its term.
func (n *Node) LinearizableRead(ctx context.Context) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	term := n.currentTerm()
	n.mu.Lock()
	done := n.barrierTerm == term
	n.mu.Unlock()
	if !done {
		if err := n.Barrier(ctx); err != nil {
			return err
		}
		n.mu.Lock()
		n.barrierTerm = term
		n.mu.Unlock()
	}
	return waitFuture(ctx, "verify leader", n.raft.VerifyLeader())
}

// Barrier waits until every preceding log entry is applied on this leader.
func (n *Node) Barrier(ctx context.Context) error {
	return waitFuture(ctx, "barrier", n.raft.Barrier(timeoutFrom(ctx)))
}

// Leader returns the current leader's node id and address, zero when none is
// known.
func (n *Node) Leader() (id uint32, address string) {
	addr, sid := n.raft.LeaderWithID()
	return parseServerID(sid), string(addr)
}

// IsLeader reports whether this node believes it leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// InContact reports whether this node's applied state can be taken as
// current: it leads (a leader cut off from a quorum steps down within the
// leader lease), or it heard from a leader within the heartbeat timeout (a
// follower that does not starts an election). A node that is not in contact
// may serve an old view indefinitely, such as one partitioned away.
func (n *Node) InContact() bool {
	if n.IsLeader() {
		return true
	}
	if id, _ := n.Leader(); id == 0 {
		return false
	}
	return time.Since(n.raft.LastContact()) < n.cfg.HeartbeatTimeout
}

// LeaderCh reports this node gaining (true) and losing (false) leadership.
func (n *Node) LeaderCh() <-chan bool { return n.raft.LeaderCh() }

// Servers returns the current Raft configuration.
func (n *Node) Servers(ctx context.Context) ([]Server, error) {
	f := n.raft.GetConfiguration()
	if err := waitFuture(ctx, "configuration", f); err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: parseServerID(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// AddVoter adds (or promotes) a voter. Leader only.
func (n *Node) AddVoter(ctx context.Context, id uint32, address string) error {
	return waitFuture(ctx, "add voter", n.raft.AddVoter(ServerID(id), raft.ServerAddress(address), 0, timeoutFrom(ctx)))
}

// AddNonvoter adds a member that replicates but does not vote. Leader only.
func (n *Node) AddNonvoter(ctx context.Context, id uint32, address string) error {
	return waitFuture(ctx, "add non-voter", n.raft.AddNonvoter(ServerID(id), raft.ServerAddress(address), 0, timeoutFrom(ctx)))
}

// RemoveServer removes a member. Leader only.
func (n *Node) RemoveServer(ctx context.Context, id uint32) error {
	return waitFuture(ctx, "remove server", n.raft.RemoveServer(ServerID(id), 0, timeoutFrom(ctx)))
}

// TransferLeadership hands leadership to the given voter, or to any other
// voter when id is 0. Leader only.
func (n *Node) TransferLeadership(ctx context.Context, id uint32, address string) error {
	var f raft.Future
	if id == 0 {
		f = n.raft.LeadershipTransfer()
	} else {
		f = n.raft.LeadershipTransferToServer(ServerID(id), raft.ServerAddress(address))
	}
	return waitFuture(ctx, "transfer leadership", f)
}

// Status is this node's view of the group.
type Status struct {
	State        string // leader, follower, candidate, shutdown
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64 // of the state machine
	LastLogIndex uint64
}

// Status reports this node's Raft state and indexes.
func (n *Node) Status() Status {
	st := n.raft.Stats()
	num := func(k string) uint64 { v, _ := strconv.ParseUint(st[k], 10, 64); return v }
	return Status{
		State:        stateName(n.raft.State()),
		Term:         num("term"),
		CommitIndex:  num("commit_index"),
		AppliedIndex: n.state.AppliedIndex(),
		LastLogIndex: n.raft.LastIndex(),
	}
}

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	default:
		return "shutdown"
	}
}

func (n *Node) currentTerm() uint64 {
	t, _ := strconv.ParseUint(n.raft.Stats()["term"], 10, 64)
	return t
}

// Snapshot forces a Raft snapshot now (tests, admin).
func (n *Node) Snapshot(ctx context.Context) error {
	return waitFuture(ctx, "snapshot", n.raft.Snapshot())
}

// Close stops Raft and closes the stores. It does not leave the group: a
// restarted node carries on as the same member.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		err := n.raft.Shutdown().Error()
		n.stopping.Wait()
		err = errors.Join(err, n.trans.Close(), n.store.Close(), n.state.Close())
		if err != nil {
			n.closeErr = pkgerr.Errorf("raftmeta", "close: %w", err)
		}
	})
	return n.closeErr
}

// timeoutFrom turns a context deadline into the timeout hashicorp/raft wants
// for enqueueing.
func timeoutFrom(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return DefaultApplyTimeout
}

// waitFuture waits for a Raft future or the context. A context that ends
// first leaves the operation running: its outcome is unknown.
func waitFuture(ctx context.Context, op string, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return wrap(op, err)
	case <-ctx.Done():
		return &Error{ErrUnknownOutcome.code, fmt.Sprintf("%s: %v; outcome unknown", op, ctx.Err())}
	}
}
