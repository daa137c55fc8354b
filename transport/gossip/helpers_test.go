package gossip

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait of these tests; conditions normally hold
// within a few hundred milliseconds (a few seconds for failure detection).
const waitTimeout = 20 * time.Second

// freeAddress returns a 127.0.0.1:port free for both TCP and UDP, as
// memberlist binds both.
func freeAddress(t *testing.T) string {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		pc, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		pc.Close()
		return addr
	}
	t.Fatal("no port free for both TCP and UDP")
	return ""
}

// syncBuffer collects a node's log lines; memberlist may write after a
// test ends, so logs go here rather than to t.Log, and are shown on
// failure.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testConfig is the config of node id in cluster "c1" at a fresh address.
func testConfig(t *testing.T, id uint32) Config {
	return Config{
		NodeID:      id,
		BindAddress: freeAddress(t),
		RPCAddress:  fmt.Sprintf("10.0.0.%d:7400", id),
		Roles:       []string{"tablet"},
		Incarnation: fmt.Sprintf("inc-%d-a", id),
		ClusterID:   "c1",
		Profile:     ProfileLocal,
	}
}

// start runs New with a log buffer and closes the Gossip at the end of
// the test.
func start(t *testing.T, cfg Config) *Gossip {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", cfg.NodeID)
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New(node %d): %v", cfg.NodeID, err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close(node %d): %v", cfg.NodeID, err)
		}
		if t.Failed() {
			t.Logf("logs of node %d:\n%s", cfg.NodeID, logs.String())
		}
	})
	return g
}

// startCluster starts nodes 1..n, each joining node 1, and waits until all
// see all.
func startCluster(t *testing.T, n int) ([]*Gossip, []Config) {
	t.Helper()
	var nodes []*Gossip
	var cfgs []Config
	for i := 1; i <= n; i++ {
		cfg := testConfig(t, uint32(i))
		if i > 1 {
			cfg.Join = []string{cfgs[0].BindAddress}
		}
		cfgs = append(cfgs, cfg)
		nodes = append(nodes, start(t, cfg))
	}
	for _, g := range nodes {
		waitMembers(t, g, "all alive", func(ms []Member) bool {
			return len(ms) == n && !slices.ContainsFunc(ms, func(m Member) bool { return m.State != StateAlive })
		})
	}
	return nodes, cfgs
}

// waitMembers waits until cond holds for g.Members(), re-checking on every
// event.
func waitMembers(t *testing.T, g *Gossip, what string, cond func([]Member) bool) []Member {
	t.Helper()
	events, cancel := g.Subscribe()
	defer cancel()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		ms := g.Members()
		if cond(ms) {
			return ms
		}
		select {
		case _, ok := <-events:
			if !ok {
				t.Fatalf("node %d: subscription closed waiting for %s", g.cfg.NodeID, what)
			}
		case <-deadline.C:
			t.Fatalf("node %d: no %s after %v; members: %s", g.cfg.NodeID, what, waitTimeout, describe(ms))
		}
	}
}

// waitEvent waits for an event matching match on events and returns it
// with every event received before it.
func waitEvent(t *testing.T, events <-chan Event, what string, match func(Event) bool) (Event, []Event) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	var seen []Event
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("subscription closed waiting for %s", what)
			}
			if match(ev) {
				return ev, seen
			}
			seen = append(seen, ev)
		case <-deadline.C:
			t.Fatalf("no %s after %v; events seen: %v", what, waitTimeout, seen)
		}
	}
}

func describe(ms []Member) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%d %s %s %s] ", m.NodeID, m.State, m.Incarnation, m.GossipAddress)
	}
	return b.String()
}

func memberState(id uint32, state State) func([]Member) bool {
	return func(ms []Member) bool {
		i := slices.IndexFunc(ms, func(m Member) bool { return m.NodeID == id })
		return i >= 0 && ms[i].State == state
	}
}
