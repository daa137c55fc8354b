package meta

import (
	"slices"
	"testing"
	"time"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// TestGoneNodesGraceFromGossip: a node's grace runs from when gossip saw it
// stop being alive, so a controller that has just taken over (its deadSince
// empty: the metadata leader died, maybe with the bucket leader) fences a
// node gossip has seen dead for the grace at once, instead of waiting for a
// grace of its own after the Raft election. A node gossip saw die within
// the grace, or never knew, still gets its whole grace; an alive one, or
// one alive with its registered incarnation again, none.
func TestGoneNodesGraceFromGossip(t *testing.T) {
	const grace = time.Second
	now := time.Unix(1000, 0)
	tablet := func(id uint32, inc string) *pb.NodeRecord {
		return &pb.NodeRecord{Id: id, Roles: []string{metastate.RoleTablet}, Incarnation: inc}
	}
	nodes := []*pb.NodeRecord{tablet(1, "a"), tablet(2, "b"), tablet(3, "c"), tablet(4, "d"), tablet(5, "e"), tablet(6, "f")}
	members := map[uint32]gossip.Member{
		1: {NodeID: 1, State: gossip.StateDead, Incarnation: "a", Since: now.Add(-1500 * time.Millisecond)}, // dead past the grace
		2: {NodeID: 2, State: gossip.StateDead, Incarnation: "b", Since: now.Add(-300 * time.Millisecond)},  // dead within it
		3: {NodeID: 3, State: gossip.StateAlive, Incarnation: "c", Since: now.Add(-time.Hour)},
		4: {NodeID: 4, State: gossip.StateAlive, Incarnation: "x", Since: now.Add(-2 * time.Second)}, // wiped: another incarnation
		5: {NodeID: 5, State: gossip.StateLeft, Incarnation: "e", Since: now},
		// 6: unknown to gossip
	}
	member := func(id uint32) (gossip.Member, bool) { m, ok := members[id]; return m, ok }

	deadSince := map[uint32]time.Time{} // a new controller
	if got, want := goneNodes(nodes, member, deadSince, now, grace), []uint32{1, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("a new controller finds %v gone, want %v", got, want)
	}
	if got, want := goneNodes(nodes, member, deadSince, now.Add(800*time.Millisecond), grace), []uint32{1, 2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("0.8 s later: %v gone, want %v (node 6, unknown to gossip, gets a whole grace)", got, want)
	}
	if got, want := goneNodes(nodes, member, deadSince, now.Add(grace), grace), []uint32{1, 2, 4, 5, 6}; !slices.Equal(got, want) {
		t.Fatalf("a grace later: %v gone, want %v", got, want)
	}
	// Node 1 comes back as registered: it is not gone, and a later death
	// gets a grace of its own.
	members[1] = gossip.Member{NodeID: 1, State: gossip.StateAlive, Incarnation: "a", Since: now.Add(2 * time.Second)}
	if got := goneNodes(nodes, member, deadSince, now.Add(2*time.Second), grace); slices.Contains(got, 1) {
		t.Fatalf("node 1 alive again, yet gone: %v", got)
	}
	members[1] = gossip.Member{NodeID: 1, State: gossip.StateDead, Incarnation: "a", Since: now.Add(3 * time.Second)}
	if got := goneNodes(nodes, member, deadSince, now.Add(3500*time.Millisecond), grace); slices.Contains(got, 1) {
		t.Fatalf("node 1 dead again for 0.5 s, yet gone: %v", got)
	}
}
