package meta

import (
	"context"
	"errors"
	"time"

	"storj.io/drpc/drpcmetadata"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// forwardedKey marks a request a meta node forwarded to the leader: the
// receiver answers NOT_LEADER rather than forwarding it again, so a request
// never bounces between nodes with different views of the leader.
const forwardedKey = "floe-forwarded"

// leaderWait bounds how long a request waits for a leader to appear.
const leaderWait = 10 * time.Second

// ForwardTimeout bounds one attempt of a request sent to another meta node.
// A paused node keeps its connections open and never answers, so without a
// bound the request would wait for as long as the pause lasts.
const ForwardTimeout = 10 * time.Second

// leaderPoll is how often a forwarded request checks that the leader it
// waits on is still the leader.
const leaderPoll = 50 * time.Millisecond

func isForwarded(ctx context.Context) bool {
	md, ok := drpcmetadata.Get(ctx)
	return ok && md[forwardedKey] == "1"
}

// onLeader runs local when this node leads, or remote against the leader,
// retrying while leadership moves (an election, a stale view) until ctx or
// leaderWait ends.
func (r *Role) onLeader(ctx context.Context, local func(context.Context) error,
	remote func(context.Context, pb.DRPCMetaClient) error) error {
	n := r.node.Load()
	if n == nil {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNAVAILABLE, "node %d is not part of a cluster yet", r.cfg.NodeID)
	}
	forwarded := isForwarded(ctx)
	deadline := time.Now().Add(leaderWait)
	pace := backoff.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	var lastErr error = raftmeta.ErrNoLeader
	for {
		var err error
		switch id, addr := n.Leader(); {
		case n.IsLeader():
			err = local(ctx)
		case forwarded:
			return raftmeta.ErrNotLeader
		case addr != "" && id != r.cfg.NodeID:
			err = r.forward(ctx, n, id, addr, remote)
		default:
			err = raftmeta.ErrNoLeader
		}
		if err == nil || !LeaderTrouble(err) {
			return err
		}
		lastErr = err
		if time.Now().After(deadline) || !pace.Wait(ctx) {
			return lastErr
		}
	}
}

// forward runs remote against the leader this node knows (id at addr),
// marked as forwarded. The attempt ends early, with a retriable error, when
// this node's view of the leader changes (the leader was paused or cut off
// and another was elected) or after ForwardTimeout; a proposal retried
// after that carries the same request id, so it applies at most once.
func (r *Role) forward(ctx context.Context, n *raftmeta.Node, id uint32, addr string,
	remote func(context.Context, pb.DRPCMetaClient) error) error {
	actx, cancel := context.WithTimeout(drpcmetadata.Add(ctx, forwardedKey, "1"), ForwardTimeout)
	defer cancel()
	moved := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(leaderPoll)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
				if now, nowAddr := n.Leader(); now != id || nowAddr != addr {
					close(moved)
					cancel()
					return
				}
			}
		}
	}()
	err := remote(actx, pb.NewDRPCMetaClient(r.pool.Conn(addr)))
	// Whether the attempt was cut short (ForwardTimeout, or the watcher
	// saw the leader move) is read before cancel, which ends actx either
	// way: read after it, every error the leader answered (an unknown
	// table or partition) became a TIMEOUT retried until leaderWait.
	cut := actx.Err() != nil
	cancel()
	<-watched
	if err == nil || ctx.Err() != nil || !cut {
		return err
	}
	select {
	case <-moved:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_NOT_LEADER,
			"metadata leadership moved away from node %d while a forwarded request waited on it", id)
	default:
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_TIMEOUT,
			"metadata leader node %d at %s did not answer within %v", id, addr, ForwardTimeout)
	}
}

// LeaderTrouble reports errors that a retry against the (new) leader may fix.
// An unknown outcome is among them: every proposal carries a request id, so
// a retry is answered with the first result if the first attempt did apply.
func LeaderTrouble(err error) bool {
	return errors.Is(err, raftmeta.ErrNotLeader) || errors.Is(err, raftmeta.ErrNoLeader) ||
		errors.Is(err, raftmeta.ErrUnknownOutcome) || errors.Is(err, transport.ErrNotLeader) ||
		errors.Is(err, transport.ErrUnavailable) || errors.Is(err, transport.ErrTimeout)
}

// propose replicates a command through the leader and turns a refusal
// recorded in its result into an error.
func (r *Role) propose(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	res, err := r.proposeResult(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.GetError() != "" {
		return res, transport.Errorf(res.Code, "%s", res.Error)
	}
	return res, nil
}

// proposeResult replicates a command through the leader and returns the
// state machine's result as is. A node outside the Raft group (tablet-only)
// hands it to any meta node, which forwards it.
func (r *Role) proposeResult(ctx context.Context, cmd *pb.Command) (*pb.CommandResult, error) {
	var res *pb.CommandResult
	remote := func(ctx context.Context, c pb.DRPCMetaClient) error {
		resp, err := c.Propose(ctx, &pb.ProposeRequest{Command: cmd})
		res = resp.GetResult()
		return err
	}
	var err error
	if r.node.Load() == nil {
		err = r.deps.CallMeta(ctx, remote)
	} else {
		err = r.onLeader(ctx, func(ctx context.Context) error {
			var err error
			res, err = r.node.Load().Propose(ctx, cmd)
			return err
		}, remote)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}
