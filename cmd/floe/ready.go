package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floedb/floe/client"
	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/transport"
)

// errNotReady: `cluster status --wait` gave up.
var errNotReady = errors.New("cluster not ready")

// defaultReadyWait bounds `cluster status --wait` given without a duration.
const defaultReadyWait = time.Minute

// readyProbeTimeout bounds one status call while waiting, so a call that
// hangs (no leader yet) is retried and reported instead of eating the wait.
const readyProbeTimeout = 2 * time.Second

// clusterReadiness says whether the cluster can take work: a metadata
// leader is known, every metadata voter (a new cluster's --bootstrap-expect
// founders) has registered, and tablet nodes are registered and every one
// of them is live (so a table created now is placed on nodes that serve
// it, and on all of them, not on the first to register).
func clusterReadiness(st *client.ClusterStatus) (bool, string) {
	if st.Leader == 0 {
		return false, "no metadata leader"
	}
	var voters, unregistered []string
	for _, v := range st.Voters {
		if v.Suffrage != "voter" {
			continue
		}
		id := strconv.FormatUint(uint64(v.ID), 10)
		voters = append(voters, id)
		if !slices.ContainsFunc(st.Nodes, func(n client.Node) bool { return n.ID == v.ID }) {
			unregistered = append(unregistered, id)
		}
	}
	if len(unregistered) > 0 {
		return false, fmt.Sprintf("metadata voters not registered yet: %s (%d of %d registered)",
			strings.Join(unregistered, ", "), len(voters)-len(unregistered), len(voters))
	}
	var tablets, down []string
	for _, n := range st.Nodes {
		if !slices.Contains(n.Roles, "tablet") {
			continue
		}
		id := strconv.FormatUint(uint64(n.ID), 10)
		tablets = append(tablets, id)
		if !n.Alive {
			down = append(down, id)
		}
	}
	switch {
	case len(tablets) == 0:
		return false, "no tablet nodes are registered"
	case len(down) > 0:
		return false, fmt.Sprintf("tablet nodes not live: %s (of %d registered)", strings.Join(down, ", "), len(tablets))
	}
	return true, ""
}

// waitFlag is --wait with an optional duration: `--wait`, `--wait=30s`, or
// `--wait 30s` (the command takes the duration from its arguments).
type waitFlag struct {
	set bool
	d   time.Duration
}

func (w *waitFlag) String() string {
	if w == nil || !w.set {
		return ""
	}
	return w.d.String()
}

func (w *waitFlag) IsBoolFlag() bool { return true }

// Type names the value in help text.
func (w *waitFlag) Type() string { return "duration" }

func (w *waitFlag) Set(s string) error {
	switch s {
	case "true":
		w.set, w.d = true, defaultReadyWait
		return nil
	case "false":
		w.set = false
		return nil
	}
	return w.setDuration(s)
}

func (w *waitFlag) setDuration(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("--wait takes a positive duration, not %q", s)
	}
	w.set, w.d = true, d
	return nil
}

// waitClusterReady asks for the cluster status until it is ready, telling
// stderr what it waits for whenever that changes, and fails with the last
// reason when wait runs out. A status call that fails for want of a
// metadata leader (it times out) is explained by the nodes at addrs.
func waitClusterReady(ctx context.Context, env *cliEnv, c *client.Client, addrs []string, wait time.Duration) (*client.ClusterStatus, error) {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pace := backoff.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	last := ""
	for {
		pctx, pcancel := context.WithTimeout(waitCtx, readyProbeTimeout)
		st, err := c.Admin().ClusterStatus(pctx)
		pcancel()
		var why string
		if err == nil {
			var ready bool
			if ready, why = clusterReadiness(st); ready {
				return st, nil
			}
		} else if waitCtx.Err() != nil && last != "" {
			why = last // cut by the end of the wait: still waiting for the same
		} else {
			why = statusTrouble(ctx, c, addrs, err)
		}
		if why != last {
			fmt.Fprintf(env.stderr, "waiting for the cluster: %s\n", why)
			last = why
		}
		if !pace.Wait(waitCtx) {
			if ctx.Err() != nil { // interrupted, not out of time
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%w after %v: %s", errNotReady, wait, why)
		}
	}
}

// raftProbeTimeout bounds the question to one node about its Raft state,
// asked when a status call failed.
const raftProbeTimeout = time.Second

// statusTrouble says what a failed status call waited for. It needs the
// metadata leader, so when it timed out or found none, the nodes' own Raft
// views (which need no leader) tell whether there is one: "no metadata
// leader" when the first node that answers knows none, as when the cluster
// lost its quorum; otherwise err as it is.
func statusTrouble(ctx context.Context, c *client.Client, addrs []string, err error) string {
	if !errors.Is(err, context.DeadlineExceeded) && !transport.IsRetriable(err) {
		return err.Error()
	}
	for _, addr := range addrs {
		rctx, cancel := context.WithTimeout(ctx, raftProbeTimeout)
		rs, rerr := c.Admin().NodeRaftStatus(rctx, addr)
		cancel()
		switch {
		case rerr != nil:
			continue
		case rs.Leader == 0:
			return fmt.Sprintf("no metadata leader (node %d is %s in term %d)", rs.NodeID, strings.ToLower(rs.State), rs.Term)
		default:
			return fmt.Sprintf("metadata leader %d did not answer: %v", rs.Leader, err)
		}
	}
	return err.Error()
}
