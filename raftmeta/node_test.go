package raftmeta

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// tcpStream is a plain TCP raft.StreamLayer for tests.
type tcpStream struct{ net.Listener }

func (s tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

type testGroup struct {
	t     *testing.T
	dirs  []string
	addrs []string
	nodes []*Node
}

func newGroup(t *testing.T, n int) *testGroup {
	g := &testGroup{t: t}
	for i := range n {
		g.dirs = append(g.dirs, filepath.Join(t.TempDir(), fmt.Sprint(i+1)))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g.addrs = append(g.addrs, l.Addr().String())
		l.Close()
	}
	for i := range n {
		g.nodes = append(g.nodes, g.open(i))
	}
	var servers []Server
	for i, a := range g.addrs {
		servers = append(servers, Server{ID: uint32(i + 1), Address: a, Voter: true})
	}
	if err := g.nodes[0].Bootstrap(servers); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range g.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return g
}

func (g *testGroup) open(i int) *Node {
	l, err := net.Listen("tcp", g.addrs[i])
	if err != nil {
		g.t.Fatal(err)
	}
	n, err := Open(Config{NodeID: uint32(i + 1), Dir: g.dirs[i], Stream: tcpStream{l},
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, SnapshotThreshold: 8})
	if err != nil {
		g.t.Fatal(err)
	}
	return n
}

func (g *testGroup) leader() (*Node, int) {
	g.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range g.nodes {
			if n != nil && n.IsLeader() {
				return n, i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatal("no leader")
	return nil, -1
}

func createDB(name string) *pb.Command {
	return &pb.Command{RequestId: []byte("req-" + name), Op: &pb.Command_CreateDatabase{CreateDatabase: &pb.CreateDatabase{Name: name}}}
}

func TestNodeProposeReadAndMembership(t *testing.T) {
	g := newGroup(t, 3)
	ctx := t.Context()
	leader, li := g.leader()
	res, err := leader.Propose(ctx, createDB("a"))
	if err != nil || metastate.ResultError(res) != nil {
		t.Fatalf("propose: %v %v", err, res)
	}
	// The same request id again: the first result, not a second database.
	again, err := leader.Propose(ctx, createDB("a"))
	if err != nil || metastate.ResultError(again) != nil || again.GetDatabase().GetId() != res.GetDatabase().GetId() {
		t.Fatalf("repeated request id: %v %v", err, again)
	}
	follower := g.nodes[(li+1)%3]
	if _, err := follower.Propose(ctx, createDB("b")); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("propose on a follower: %v", err)
	}
	if err := follower.LinearizableRead(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("linearizable read on a follower: %v", err)
	}
	if err := leader.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	if dbs := leader.State().Databases(); len(dbs) != 1 {
		t.Fatalf("databases: %v", dbs)
	}
	id, addr := follower.Leader()
	if id != uint32(li+1) || addr != g.addrs[li] {
		t.Fatalf("follower sees leader %d at %s", id, addr)
	}

	// Leadership moves on request.
	if err := leader.TransferLeadership(ctx, 0, ""); err != nil {
		t.Fatal(err)
	}
	newLeader, ni := g.leader()
	if ni == li {
		t.Fatal("leadership did not move")
	}
	// Remove a voter and add it back.
	victim := (ni + 1) % 3
	if err := newLeader.RemoveServer(ctx, uint32(victim+1)); err != nil {
		t.Fatal(err)
	}
	servers, _ := newLeader.Servers(ctx)
	if len(servers) != 2 {
		t.Fatalf("after remove: %+v", servers)
	}
	if err := newLeader.AddNonvoter(ctx, uint32(victim+1), g.addrs[victim]); err != nil {
		t.Fatal(err)
	}
	if err := newLeader.AddVoter(ctx, uint32(victim+1), g.addrs[victim]); err != nil {
		t.Fatal(err)
	}
	servers, _ = newLeader.Servers(ctx)
	if len(servers) != 3 {
		t.Fatalf("after re-add: %+v", servers)
	}
	for _, s := range servers {
		if !s.Voter {
			t.Fatalf("after re-add, %d is not a voter: %+v", s.ID, servers)
		}
	}
}

// TestNodeRestartDoesNotReapply: after snapshots and a restart, the state
// file keeps its applied index, Raft replays only what it lacks, and every
// node converges on the same catalog.
func TestNodeRestartDoesNotReapply(t *testing.T) {
	g := newGroup(t, 3)
	ctx := t.Context()
	leader, _ := g.leader()
	for i := range 30 {
		if _, err := leader.Propose(ctx, createDB(fmt.Sprintf("d%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	// Let every node apply everything first, so the applied index read
	// before a restart is final.
	if err := leader.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	target := leader.State().AppliedIndex()
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range g.nodes {
		for n.State().AppliedIndex() < target && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for i, n := range g.nodes {
		applied := n.State().AppliedIndex()
		n.Close()
		g.nodes[i] = nil
		g.nodes[i] = g.open(i)
		if got := g.nodes[i].State().AppliedIndex(); got != applied {
			t.Fatalf("node %d applied index %d after restart, %d before", i+1, got, applied)
		}
	}
	leader, _ = g.leader()
	if _, err := leader.Propose(ctx, createDB("after")); err != nil {
		t.Fatal(err)
	}
	if err := leader.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	want := leader.State().AppliedIndex()
	deadline = time.Now().Add(10 * time.Second)
	for _, n := range g.nodes {
		for n.State().AppliedIndex() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := len(n.State().Databases()); got != 31 {
			t.Fatalf("node has %d databases, want 31", got)
		}
	}
}

func TestNodeContextEndsWait(t *testing.T) {
	g := newGroup(t, 3)
	leader, li := g.leader()
	// Stop both followers: a proposal cannot commit.
	for i := range g.nodes {
		if i != li {
			g.nodes[i].Close()
			g.nodes[i] = nil
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := leader.Propose(ctx, createDB("stuck"))
	if !errors.Is(err, ErrUnknownOutcome) && !errors.Is(err, ErrNotLeader) {
		t.Fatalf("proposal without a quorum: %v", err)
	}
}
