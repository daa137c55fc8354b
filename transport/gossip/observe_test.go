package gossip

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// bareGossip is a Gossip without memberlist, to drive its delegate by hand.
func bareGossip(clusterID string) *Gossip {
	return &Gossip{
		cfg:         Config{NodeID: 1, ClusterID: clusterID},
		logger:      slog.New(slog.DiscardHandler),
		forgetAfter: DefaultForgetAfter,
		members:     make(map[uint32]Member),
		subs:        make(map[chan Event]struct{}),
	}
}

func node(t *testing.T, id uint32, m nodeMeta) *memberlist.Node {
	t.Helper()
	buf, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	return &memberlist.Node{Name: nodeName(id), Addr: net.IPv4(127, 0, 0, 1), Port: uint16(7000 + id), Meta: buf}
}

func TestAdmit(t *testing.T) {
	g := bareGossip("c1")
	d := &delegate{g: g}
	own := nodeMeta{ClusterID: "c1", RPCAddress: "r", Incarnation: "i"}
	if err := d.NotifyAlive(node(t, 2, own)); err != nil {
		t.Errorf("own cluster refused: %v", err)
	}
	foreign := own
	foreign.ClusterID = "c2"
	if err := d.NotifyAlive(node(t, 2, foreign)); !errors.Is(err, ErrForeignCluster) {
		t.Errorf("foreign cluster: %v, want ErrForeignCluster", err)
	}
	if err := d.NotifyMerge([]*memberlist.Node{node(t, 2, own), node(t, 3, foreign)}); !errors.Is(err, ErrForeignCluster) {
		t.Errorf("merge with a foreign node: %v, want ErrForeignCluster", err)
	}
	bad := node(t, 2, own)
	bad.Meta = []byte("{}")
	if err := d.NotifyAlive(bad); !errors.Is(err, ErrInvalidMeta) {
		t.Errorf("bad meta: %v, want ErrInvalidMeta", err)
	}
	named := node(t, 2, own)
	named.Name = "host-a"
	if err := d.NotifyAlive(named); err == nil {
		t.Error("a node named host-a was admitted")
	}
	// Without a cluster id, any cluster is admitted.
	if err := (&delegate{g: bareGossip("")}).NotifyAlive(node(t, 2, foreign)); err != nil {
		t.Errorf("no cluster id: %v", err)
	}
}

func TestLeftOrDeadWhateverTheOrder(t *testing.T) {
	meta := nodeMeta{ClusterID: "c1", RPCAddress: "r", Incarnation: "i"}
	leaving := meta
	leaving.Leaving = true
	for _, tc := range []struct {
		name  string
		steps func(d *delegate)
		want  []EventKind
		state State
	}{
		{"crash", func(d *delegate) {
			d.NotifyLeave(node(t, 2, meta))
		}, []EventKind{EventFailed}, StateDead},
		{"leave: announcement first", func(d *delegate) {
			_ = d.NotifyAlive(node(t, 2, leaving))
			d.NotifyUpdate(node(t, 2, leaving))
			d.NotifyLeave(node(t, 2, leaving))
		}, []EventKind{EventLeft}, StateLeft},
		{"leave: memberlist's leave first", func(d *delegate) {
			d.NotifyLeave(node(t, 2, meta))
			_ = d.NotifyAlive(node(t, 2, leaving)) // memberlist then drops it as old
		}, []EventKind{EventFailed, EventLeft}, StateLeft},
		{"left, then back", func(d *delegate) {
			d.NotifyUpdate(node(t, 2, leaving))
			d.NotifyLeave(node(t, 2, leaving))
			d.NotifyJoin(node(t, 2, meta))
		}, []EventKind{EventLeft, EventJoined}, StateAlive},
		{"stale announcement after a restart", func(d *delegate) {
			_ = d.NotifyAlive(node(t, 2, leaving)) // memberlist then drops it as old
		}, nil, StateAlive},
		{"stale announcement of an older incarnation", func(d *delegate) {
			d.NotifyLeave(node(t, 2, meta))
			old := leaving
			old.Incarnation = "h"
			_ = d.NotifyAlive(node(t, 2, old))
		}, []EventKind{EventFailed}, StateDead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := bareGossip("c1")
			d := &delegate{g: g}
			d.NotifyJoin(node(t, 2, meta))
			events, cancel := g.Subscribe()
			defer cancel()
			tc.steps(d)
			var got []EventKind
			for len(events) > 0 {
				got = append(got, (<-events).Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if m, _ := g.Member(2); m.State != tc.state {
				t.Errorf("state %v, want %v", m.State, tc.state)
			}
		})
	}
}

func TestSlowSubscriberSeesLatestState(t *testing.T) {
	g := bareGossip("c1")
	d := &delegate{g: g}
	events, cancel := g.Subscribe()
	defer cancel()
	const updates = 3 * subscriberBuffer
	for i := range updates {
		d.NotifyUpdate(node(t, 2, nodeMeta{ClusterID: "c1", RPCAddress: fmt.Sprintf("r%d", i), Incarnation: "i"}))
	}
	if len(events) != subscriberBuffer {
		t.Fatalf("%d events pending, want a full buffer of %d", len(events), subscriberBuffer)
	}
	<-events // woken up: re-read
	if m, _ := g.Member(2); m.RPCAddress != fmt.Sprintf("r%d", updates-1) {
		t.Errorf("Member(2) has %q, want the last update", m.RPCAddress)
	}
}

func TestForgetAfter(t *testing.T) {
	g := bareGossip("c1")
	g.forgetAfter = -time.Nanosecond // forget dead members at once
	d := &delegate{g: g}
	meta := nodeMeta{ClusterID: "c1", RPCAddress: "r", Incarnation: "i"}
	d.NotifyJoin(node(t, 2, meta))
	d.NotifyJoin(node(t, 3, meta))
	d.NotifyLeave(node(t, 3, meta))
	ms := g.Members()
	if len(ms) != 1 || ms[0].NodeID != 2 {
		t.Errorf("members %s, want only the alive node 2", describe(ms))
	}
}
