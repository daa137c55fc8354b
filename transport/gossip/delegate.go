package gossip

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate receives memberlist's callbacks for a Gossip. memberlist calls
// most of them with its node lock held: they must not call memberlist and
// must not block.
type delegate struct {
	g *Gossip
}

var (
	_ memberlist.Delegate         = (*delegate)(nil)
	_ memberlist.EventDelegate    = (*delegate)(nil)
	_ memberlist.AliveDelegate    = (*delegate)(nil)
	_ memberlist.MergeDelegate    = (*delegate)(nil)
	_ memberlist.ConflictDelegate = (*delegate)(nil)
)

// NodeMeta returns this node's current meta; New checked that it fits
// the limit.
func (d *delegate) NodeMeta(limit int) []byte {
	d.g.mu.Lock()
	defer d.g.mu.Unlock()
	if len(d.g.meta) > limit {
		return nil
	}
	return d.g.meta
}

// Floe sends no user messages or state through gossip.
func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// NotifyAlive admits a node into this node's view: a refused node is
// ignored by memberlist and never becomes a member. memberlist calls it for
// every alive message, before deciding whether the message is news; a
// leave announcement that arrives after the node was already found dead is
// seen only here.
func (d *delegate) NotifyAlive(peer *memberlist.Node) error {
	id, meta, err := d.g.admit(peer)
	if err != nil {
		return err
	}
	if meta.Leaving {
		d.g.observe(peer, id, meta, sawAlive)
	}
	return nil
}

// NotifyMerge vets a whole remote view when joining (either side): one
// foreign or malformed node refuses the join.
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	for _, p := range peers {
		if _, _, err := d.g.admit(p); err != nil {
			return err
		}
	}
	return nil
}

func (d *delegate) NotifyJoin(n *memberlist.Node)   { d.g.observeNode(n, sawJoin) }
func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.g.observeNode(n, sawUpdate) }

// NotifyLeave is called for both a failure and a graceful leave:
// memberlist v0.7.0 passes a Node whose State is not maintained, so the two
// are told apart by the leaving flag of the meta (see Gossip.Leave).
func (d *delegate) NotifyLeave(n *memberlist.Node) { d.g.observeNode(n, sawLeave) }

// NotifyConflict: two live processes claim the same node id. memberlist
// keeps the one it knew; this is a configuration error worth shouting.
func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	d.g.logger.Error("two nodes claim the same node id", "node_name", existing.Name,
		"gossip_address", existing.Address(), "other_gossip_address", other.Address())
}

// admit checks that n is a Floe node of this cluster and returns its id
// and meta.
func (g *Gossip) admit(n *memberlist.Node) (uint32, nodeMeta, error) {
	id, err := parseNodeName(n.Name)
	if err != nil {
		return 0, nodeMeta{}, err
	}
	meta, err := decodeMeta(n.Meta)
	if err != nil {
		return 0, nodeMeta{}, fmt.Errorf("node %d: %w", id, err)
	}
	if g.cfg.ClusterID != "" && meta.ClusterID != g.cfg.ClusterID {
		return 0, nodeMeta{}, fmt.Errorf("%w: node %d belongs to cluster %q, not %q", ErrForeignCluster, id, meta.ClusterID, g.cfg.ClusterID)
	}
	return id, meta, nil
}

// sighting is what memberlist told about a node.
type sighting uint8

const (
	sawAlive  sighting = iota + 1 // an alive message carrying the leaving flag
	sawJoin                       // alive, was unknown, dead or left
	sawUpdate                     // alive, meta changed
	sawLeave                      // dead or left
)

func (g *Gossip) observeNode(n *memberlist.Node, s sighting) {
	id, meta, err := g.admit(n)
	if err != nil {
		// NotifyAlive lets only admissible nodes in, with their meta.
		g.logger.Warn("ignoring an inadmissible node", "node_name", n.Name, "err", err)
		return
	}
	g.observe(n, id, meta, s)
}

// observe records what memberlist told about node id and tells
// subscribers if the member changed.
//
// A node that announced it is leaving (meta.Leaving) is Left from then on,
// whatever memberlist reports next, until it is alive again without the
// flag. The announcement normally arrives before memberlist's leave; if
// the leave arrives first the node is Dead until the announcement reaches
// NotifyAlive, then Left.
func (g *Gossip) observe(n *memberlist.Node, id uint32, meta nodeMeta, s sighting) {
	now := time.Now()
	m := Member{
		NodeID:        id,
		RPCAddress:    meta.RPCAddress,
		Roles:         meta.Roles,
		Incarnation:   meta.Incarnation,
		GossipAddress: n.Address(),
		State:         StateAlive,
		Since:         now,
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	prev, known := g.members[id]
	alreadyLeft := known && prev.State == StateLeft && prev.Incarnation == meta.Incarnation
	var kind EventKind
	switch {
	case s == sawAlive:
		// Only a leave overtaken by memberlist's: an alive member gets
		// the flagged meta through NotifyUpdate if memberlist finds it
		// newer, and a stale copy (say, of a node that has since
		// restarted) must not mark it left.
		if !known || prev.State != StateDead || prev.Incarnation != meta.Incarnation {
			return
		}
		m.State, kind = StateLeft, EventLeft
	case meta.Leaving:
		if alreadyLeft {
			return
		}
		m.State, kind = StateLeft, EventLeft
	case s == sawLeave:
		m.State, kind = StateDead, EventFailed
	case s == sawJoin:
		kind = EventJoined
	default:
		kind = EventUpdated
	}
	g.members[id] = m
	g.forgetLocked(now)
	for ch := range g.subs {
		ev := Event{Member: m, Kind: kind}
		ev.Roles = slices.Clone(m.Roles)
		select {
		case ch <- ev:
		default:
			// The subscriber has events pending; it will re-read Members.
		}
	}
	g.logger.Info("member "+kind.String(), "node_id", id, "rpc_address", m.RPCAddress,
		"gossip_address", m.GossipAddress, "incarnation", m.Incarnation, "roles", m.Roles)
}
