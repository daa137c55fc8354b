package meta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/floedb/floe/internal/backoff"
	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// catchUpWait bounds how long add-voter waits for a new member to apply
// what the leader had applied when it was added. It stays under the
// client's per-attempt timeout (5 s) together with the greeting, so the
// answer comes back in one attempt; a member that needs longer stays a
// non-voter and add-voter, run again, resumes the wait.
const catchUpWait = 3 * time.Second

// addVoter runs on the leader. A voter that nobody runs turns a one-voter
// group into a two-voter one that needs both for a quorum: the metadata
// stops for good. So the address must first answer as meta node id of this
// cluster; the node then joins as a non-voter, which counts for nothing,
// and becomes a voter only once it has caught up.
func (r *Role) addVoter(ctx context.Context, n *raftmeta.Node, id uint32, addr string) error {
	servers, err := n.Servers(ctx)
	if err != nil {
		return err
	}
	var cur *raftmeta.Server
	if i := slices.IndexFunc(servers, func(v raftmeta.Server) bool { return v.ID == id }); i >= 0 {
		cur = &servers[i]
	}
	if cur != nil && cur.Address != addr {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_INVALID_REQUEST,
			"node %d is already a member at %s, not %s: remove it first (cluster remove-voter %d)", id, cur.Address, addr, id)
	}
	if cur != nil && cur.Voter {
		return nil
	}
	if err := r.deps.Peers.CheckCandidate(ctx, id, addr); err != nil {
		return err
	}
	if err := n.LinearizableRead(ctx); err != nil {
		return err
	}
	// The state machine's applied index, not Raft's commit index: the
	// latter may be a configuration entry, which a member's state file
	// never records.
	target := n.Status().AppliedIndex
	if cur == nil {
		if err := n.AddNonvoter(ctx, id, addr); err != nil {
			return err
		}
		r.log.Info("added a non-voter; promoting it once caught up", "new_node", id, "address", addr, "applied_index", target)
	}
	applied, err := r.waitCaughtUp(ctx, id, addr, target)
	if err != nil {
		return err
	}
	if applied < target {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_QUORUM_AT_RISK,
			"node %d was added as a non-voter but has not caught up within %v (applied index %d of %d); "+
				"it stays a non-voter, which the quorum does not count on. Run add-voter again once "+
				"`floe cluster status` shows it following", id, catchUpWait, applied, target)
	}
	return n.AddVoter(ctx, id, addr)
}

// waitCaughtUp polls the member at addr until its state machine applied
// target or catchUpWait passes, and returns the last applied index it
// reported.
func (r *Role) waitCaughtUp(ctx context.Context, id uint32, addr string, target uint64) (uint64, error) {
	wctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	var applied uint64
	pace := backoff.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	for {
		pctx, pcancel := context.WithTimeout(wctx, statusProbeTimeout)
		r, err := pb.NewDRPCMetaClient(r.pool.Conn(addr)).RaftStatus(pctx, &pb.RaftStatusRequest{})
		pcancel()
		if err == nil && r.NodeId == id {
			applied = r.AppliedIndex
		}
		if applied >= target {
			return applied, nil
		}
		if !pace.Wait(wctx) {
			// The wait's own deadline is an answer (not caught up); the
			// caller's is not.
			return applied, ctx.Err()
		}
	}
}

// removeVoter runs on the leader. It never removes the last voter, and
// without force it refuses a removal after which the voters that answer
// are fewer than a quorum of the voters left: the metadata would stop
// taking changes until the missing ones come back.
func (r *Role) removeVoter(ctx context.Context, n *raftmeta.Node, id uint32, force bool) error {
	servers, err := n.Servers(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(servers, func(v raftmeta.Server) bool { return v.ID == id })
	if i < 0 {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node %d is not a member of the metadata group", id)
	}
	if servers[i].Voter {
		if risk, last := r.voterRemovalRisk(ctx, servers, id); risk != nil && (!force || last) {
			return risk
		}
	}
	return n.RemoveServer(ctx, id)
}

// voterRemovalRisk probes the voters of servers other than id and says,
// with removalRisk, why removing voter id puts the quorum at risk (nil when
// it does not); last reports that id is the only voter.
func (r *Role) voterRemovalRisk(ctx context.Context, servers []raftmeta.Server, id uint32) (risk error, last bool) {
	addrs := map[uint32]string{}
	for _, v := range servers {
		if v.Voter && v.ID != id {
			addrs[v.ID] = v.Address
		}
	}
	live := map[uint32]bool{r.cfg.NodeID: true}
	for vid, state := range r.probe(ctx, addrs) {
		live[vid] = state == "leader" || state == "follower"
	}
	return removalRisk(servers, id, live), len(addrs) == 0
}

// removalRisk says why removing voter id from servers puts the quorum at
// risk, given which voters answer (live), or nil when it does not.
func removalRisk(servers []raftmeta.Server, id uint32, live map[uint32]bool) error {
	var left, answering []string
	for _, v := range servers {
		if !v.Voter || v.ID == id {
			continue
		}
		left = append(left, fmt.Sprint(v.ID))
		if live[v.ID] {
			answering = append(answering, fmt.Sprint(v.ID))
		}
	}
	if len(left) == 0 {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_QUORUM_AT_RISK,
			"refusing to remove node %d: it is the last voter, and the metadata needs one. "+
				"Add its replacement first (cluster add-voter), then remove it", id)
	}
	quorum := len(left)/2 + 1
	if len(answering) < quorum {
		return transport.Errorf(pb.ErrorCode_ERROR_CODE_QUORUM_AT_RISK,
			"refusing to remove node %d: the voters left would be %s, of which %d answer (%s), fewer than their quorum of %d, "+
				"so the metadata would stop taking changes. Bring the missing voters back first, or pass --force",
			id, strings.Join(left, ","), len(answering), strings.Join(answering, ","), quorum)
	}
	return nil
}
