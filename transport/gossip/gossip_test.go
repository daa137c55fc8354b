package gossip

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestMembersSeeEachOtherWithMeta(t *testing.T) {
	var cfgs []Config
	var nodes []*Gossip
	roles := [][]string{{"meta", "tablet"}, {"tablet"}, {"meta"}}
	for i := range 3 {
		cfg := testConfig(t, uint32(i+1))
		cfg.Roles = roles[i]
		if i > 0 {
			cfg.Join = []string{cfgs[i-1].BindAddress} // a chain: 3 learns of 1 through 2
		}
		cfgs = append(cfgs, cfg)
		nodes = append(nodes, start(t, cfg))
	}
	for _, g := range nodes {
		ms := waitMembers(t, g, "three members", func(ms []Member) bool { return len(ms) == 3 })
		for i, m := range ms {
			want := Member{
				NodeID:        cfgs[i].NodeID,
				RPCAddress:    cfgs[i].RPCAddress,
				Roles:         cfgs[i].Roles,
				Incarnation:   cfgs[i].Incarnation,
				GossipAddress: cfgs[i].BindAddress,
				State:         StateAlive,
			}
			m.Since = time.Time{}
			if !equalMember(m, want) {
				t.Errorf("node %d sees %+v, want %+v", g.cfg.NodeID, m, want)
			}
		}
		if got, ok := g.Member(2); !ok || got.RPCAddress != cfgs[1].RPCAddress {
			t.Errorf("node %d: Member(2) = %+v, %v", g.cfg.NodeID, got, ok)
		}
		if _, ok := g.Member(4); ok {
			t.Errorf("node %d: Member(4) found", g.cfg.NodeID)
		}
		if g.Address() != g.cfg.BindAddress {
			t.Errorf("node %d: Address() = %s, want %s", g.cfg.NodeID, g.Address(), g.cfg.BindAddress)
		}
	}
}

func equalMember(a, b Member) bool {
	return a.NodeID == b.NodeID && a.RPCAddress == b.RPCAddress && slices.Equal(a.Roles, b.Roles) &&
		a.Incarnation == b.Incarnation && a.GossipAddress == b.GossipAddress && a.State == b.State && a.Since.Equal(b.Since)
}

func TestLeaveIsReportedAsLeft(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	subs := make([]<-chan Event, 2)
	for i := range subs {
		ch, cancel := nodes[i].Subscribe()
		defer cancel()
		subs[i] = ch
	}
	if err := nodes[2].Leave(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for i, ch := range subs {
		ev, before := waitEvent(t, ch, "node 3 left or failed", func(ev Event) bool {
			return ev.NodeID == 3 && (ev.Kind == EventLeft || ev.Kind == EventFailed)
		})
		if ev.Kind != EventLeft || ev.State != StateLeft {
			t.Errorf("node %d: got %v (state %v) for node 3, want left; before: %v", i+1, ev.Kind, ev.State, before)
		}
		if m, _ := nodes[i].Member(3); m.State != StateLeft || m.Incarnation != "inc-3-a" {
			t.Errorf("node %d: Member(3) = %+v, want left with its meta", i+1, m)
		}
	}
	if m, _ := nodes[2].Member(3); m.State != StateLeft {
		t.Errorf("the leaving node sees itself %v", m.State)
	}
	if _, err := nodes[2].Join(t.Context(), []string{nodes[0].Address()}); !errors.Is(err, ErrLeft) {
		t.Errorf("Join after Leave: %v, want ErrLeft", err)
	}
	if err := nodes[2].Leave(time.Second); err != nil {
		t.Errorf("second Leave: %v", err)
	}
}

func TestCrashIsReportedAsDead(t *testing.T) {
	nodes, _ := startCluster(t, 3)
	type detection struct {
		node    uint32
		ev      Event
		elapsed time.Duration
	}
	var wg sync.WaitGroup
	found := make(chan detection, 2)
	var start time.Time
	ready := make(chan struct{})
	for _, g := range nodes[:2] {
		ch, cancel := g.Subscribe()
		defer cancel()
		wg.Go(func() {
			<-ready
			deadline := time.NewTimer(waitTimeout)
			defer deadline.Stop()
			for {
				select {
				case ev, ok := <-ch:
					if !ok {
						return
					}
					if ev.NodeID == 3 && ev.Kind != EventUpdated {
						found <- detection{g.cfg.NodeID, ev, time.Since(start)}
						return
					}
				case <-deadline.C:
					return
				}
			}
		})
	}
	start = time.Now()
	close(ready)
	if err := nodes[2].Close(); err != nil { // no Leave: a crash
		t.Fatal(err)
	}
	wg.Wait()
	close(found)
	var got int
	for d := range found {
		got++
		if d.ev.Kind != EventFailed || d.ev.State != StateDead {
			t.Errorf("node %d: got %v (state %v) for node 3, want failed", d.node, d.ev.Kind, d.ev.State)
		}
		t.Logf("node %d saw node 3 dead %v after it stopped (local profile)", d.node, d.elapsed.Round(time.Millisecond))
	}
	if got != 2 {
		t.Fatalf("%d of 2 survivors saw node 3 fail within %v", got, waitTimeout)
	}
	for _, g := range nodes[:2] {
		if m, ok := g.Member(3); !ok || m.State != StateDead || m.RPCAddress == "" {
			t.Errorf("node %d: dead node 3 listed as %+v, %v", g.cfg.NodeID, m, ok)
		}
	}
}

func TestOtherClusterCannotJoin(t *testing.T) {
	nodes, _ := startCluster(t, 2)
	events, cancel := nodes[0].Subscribe()
	defer cancel()

	cfg := testConfig(t, 9)
	cfg.ClusterID = "c2"
	foreign := start(t, cfg)
	ctx, stop := context.WithTimeout(t.Context(), time.Second)
	defer stop()
	if n, err := foreign.Join(ctx, []string{nodes[0].Address(), nodes[1].Address()}); err == nil {
		t.Fatalf("node of cluster c2 joined c1 (%d answered)", n)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Join: %v, want it to retry until the deadline", err)
	}
	// And the other way round: c1 does not take c2's node in.
	ctx2, stop2 := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer stop2()
	if _, err := nodes[1].Join(ctx2, []string{foreign.Address()}); err == nil {
		t.Error("node of cluster c1 joined the node of c2")
	}

	for _, g := range nodes {
		if m, ok := g.Member(9); ok {
			t.Errorf("node %d lists the foreign node: %+v", g.cfg.NodeID, m)
		}
	}
	if ms := foreign.Members(); len(ms) != 1 || ms[0].NodeID != 9 {
		t.Errorf("foreign node sees %s", describe(ms))
	}
	for {
		select {
		case ev := <-events:
			if ev.NodeID == 9 {
				t.Errorf("node 1 got an event for the foreign node: %+v", ev)
			}
			continue
		default:
		}
		break
	}
}

func TestRestartWithNewIncarnation(t *testing.T) {
	for _, tc := range []struct {
		name          string
		waitDead      bool
		acceptedKinds []EventKind
	}{
		{"after it was found dead", true, []EventKind{EventJoined}},
		{"before it was found dead", false, []EventKind{EventJoined, EventUpdated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, cfgs := startCluster(t, 3)
			events, cancel := nodes[0].Subscribe()
			defer cancel()
			if err := nodes[2].Close(); err != nil {
				t.Fatal(err)
			}
			if tc.waitDead {
				waitMembers(t, nodes[0], "node 3 dead", memberState(3, StateDead))
			}
			cfg := cfgs[2]
			cfg.Incarnation = "inc-3-b"
			restarted := start(t, cfg)

			ev, _ := waitEvent(t, events, "node 3 with its new incarnation", func(ev Event) bool {
				return ev.NodeID == 3 && ev.Incarnation == "inc-3-b" && ev.State == StateAlive
			})
			if !slices.Contains(tc.acceptedKinds, ev.Kind) {
				t.Errorf("restart reported as %v, want one of %v", ev.Kind, tc.acceptedKinds)
			}
			t.Logf("restart reported as %v", ev.Kind)
			for _, g := range []*Gossip{nodes[0], nodes[1], restarted} {
				waitMembers(t, g, "node 3 alive with the new incarnation", func(ms []Member) bool {
					return len(ms) == 3 && ms[2].Incarnation == "inc-3-b" && ms[2].State == StateAlive &&
						ms[0].State == StateAlive && ms[1].State == StateAlive
				})
			}
		})
	}
}

func TestDeadMemberIsReconnected(t *testing.T) {
	nodes, cfgs := startCluster(t, 2)
	if err := nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, nodes[0], "node 2 dead", memberState(2, StateDead))
	cfg := cfgs[1]
	cfg.Join = nil // it knows nobody: only node 1's reconnect can find it
	cfg.Incarnation = "inc-2-b"
	restarted := start(t, cfg)
	waitMembers(t, nodes[0], "node 2 back", memberState(2, StateAlive))
	waitMembers(t, restarted, "node 1 known", memberState(1, StateAlive))
}

func TestBackgroundJoinWaitsForSeed(t *testing.T) {
	cfg1 := testConfig(t, 1)
	cfg2 := testConfig(t, 2)
	cfg2.Join = []string{cfg1.BindAddress} // nobody there yet
	n2 := start(t, cfg2)
	n1 := start(t, cfg1)
	waitMembers(t, n2, "node 1", memberState(1, StateAlive))
	waitMembers(t, n1, "node 2", memberState(2, StateAlive))
}

func TestJoinGivesUpWithContext(t *testing.T) {
	g := start(t, testConfig(t, 1))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := g.Join(ctx, []string{freeAddress(t)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Join to nobody: %v, want DeadlineExceeded", err)
	}
	// Joining only itself does not count as joining.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if _, err := g.Join(ctx2, []string{g.Address()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Join to itself: %v, want DeadlineExceeded", err)
	}
	if _, err := g.Join(t.Context(), nil); err == nil {
		t.Error("Join with no addresses succeeded")
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	g, err := New(testConfig(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := g.Subscribe()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-events; ok {
		t.Error("event after Close")
	}
	cancel() // after Close: a no-op
	if late, _ := g.Subscribe(); late != nil {
		if _, ok := <-late; ok {
			t.Error("subscription after Close is open")
		}
	}
	if err := g.Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Leave after Close: %v, want ErrClosed", err)
	}
	if _, err := g.Join(t.Context(), []string{"127.0.0.1:1"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Join after Close: %v, want ErrClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
