package gossip

import (
	"strconv"
	"time"
)

// State is what this node believes about a member.
type State uint8

const (
	// StateAlive: the member answers probes (or has not yet been found
	// failing).
	StateAlive State = iota + 1
	// StateDead: the member stopped answering and its suspicion timed out.
	// It may be crashed, stopped without leaving, or cut off by a partition.
	StateDead
	// StateLeft: the member announced that it is leaving (Leave).
	StateLeft
)

func (s State) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateDead:
		return "dead"
	case StateLeft:
		return "left"
	default:
		return "state(" + strconv.Itoa(int(s)) + ")"
	}
}

// Member is a node of the pool as this node sees it.
type Member struct {
	// NodeID is the member's node id (its memberlist name in decimal).
	NodeID uint32
	// RPCAddress is where the member serves DRPC (host:port).
	RPCAddress string
	// Roles are the member's roles ("meta", "tablet").
	Roles []string
	// Incarnation identifies the member's data folder: a new value for
	// the same NodeID means the node was wiped and is not its old self.
	Incarnation string
	// GossipAddress is the member's advertised gossip address (ip:port).
	GossipAddress string
	// State is the member's state.
	State State
	// Since is when this node saw State (or the meta) change, by its own
	// clock.
	Since time.Time
}

// EventKind says what happened to a member.
type EventKind uint8

const (
	// EventJoined: a member is alive that was unknown, dead or left.
	EventJoined EventKind = iota + 1
	// EventUpdated: an alive member changed its meta (RPC address, roles or
	// incarnation), e.g. it restarted before it was found dead.
	EventUpdated
	// EventFailed: a member was found dead (State becomes StateDead).
	EventFailed
	// EventLeft: a member left gracefully (State becomes StateLeft).
	EventLeft
)

func (k EventKind) String() string {
	switch k {
	case EventJoined:
		return "joined"
	case EventUpdated:
		return "updated"
	case EventFailed:
		return "failed"
	case EventLeft:
		return "left"
	default:
		return "event(" + strconv.Itoa(int(k)) + ")"
	}
}

// Event is a change of one member, with the member as it is after the
// change.
type Event struct {
	Member
	Kind EventKind
}
