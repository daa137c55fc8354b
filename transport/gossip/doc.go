// Package gossip is Floe's node liveness: every node joins one
// hashicorp/memberlist pool (SWIM gossip over UDP, state syncs over TCP, on
// one port) and learns from it which nodes are alive, which failed and which
// left. Gossip is advisory: the controller uses it to decide when to move
// leaders away from a node, but correctness comes from epochs, never from
// what gossip says or how fast it says it.
//
// # Members
//
// A node's memberlist name is its node id in decimal. Its meta carries its
// RPC address, roles, incarnation (the id of its data folder) and cluster
// id. Members lists every node this one knows, itself included, sorted by
// id, as StateAlive, StateDead or StateLeft; dead and left nodes stay listed
// for Config.ForgetAfter (default an hour). A node absent from Members is
// unknown: treat it like a dead one.
//
// memberlist's suspicion (a node that missed a probe and may yet refute it)
// is not reported: memberlist raises no event for it, and the only way to
// read it, Memberlist.Members, hands out pointers to state it keeps
// changing under its own lock.
//
// # Events
//
// Subscribe returns a channel of events (Joined, Updated, Failed, Left).
// Each subscriber has a buffer of 64; when it is full, newer events for that
// subscriber are dropped instead of stalling gossip. Treat an event as a
// wake-up and re-read Members or Member: the table is always current, and a
// full buffer means an event is pending, so a subscriber that drains its
// channel and re-reads never misses the latest state of any member, only
// steps in between.
//
// # Leaving and failing
//
// The controller acts at once on StateLeft and only after a grace period on
// StateDead, so the two must not be confused. memberlist v0.7.0 reports
// both through EventDelegate.NotifyLeave with the same Node state (its
// nodeState shadows Node.State), so Leave announces itself twice: it first
// re-advertises this node's meta with the leaving flag set (UpdateNode,
// waiting until the broadcast went out), then runs memberlist's Leave. A
// node whose latest meta has the flag is Left; one that stops answering
// without it is Dead. Should memberlist's leave overtake the flagged meta
// somewhere, that node reports Failed and then Left when the meta arrives
// (it still reaches the alive delegate, which memberlist consults before
// discarding the message as old).
//
// # Clusters, restarts, partitions
//
// With Config.ClusterID set, the alive delegate refuses any node whose meta
// carries another cluster id (memberlist then ignores it) and the merge
// delegate refuses a join between pools that contain one, on both sides:
// such a Join fails and the node is never listed.
//
// A node restarted with the same id comes back as Joined (it had been found
// dead) or Updated (it had not): memberlist makes the new process refute
// its old state with a higher memberlist incarnation. Member.Incarnation
// tells a restart of the same data folder from a wiped node. A node that
// comes back at another gossip address is refused as a conflict until the
// others have forgotten its old address (GossipToTheDeadTime: LAN 30 s,
// local 5 s), then accepted at the next state sync.
//
// memberlist forgets a dead node after GossipToTheDeadTime and never
// contacts it again, so two sides of a partition that outlasted it would
// stay apart. Gossip therefore asks one dead member at random to rejoin
// every reconnect interval (LAN 30 s, local 500 ms) until it is forgotten.
// Config.Join is retried with backoff until some other member answers;
// New does not wait for it.
//
// # Node meta layout
//
// At most 512 bytes (memberlist.MetaMaxSize; New refuses larger ones with
// ErrMetaTooLarge). A string is a uvarint length and its bytes.
//
//	version      1 byte, 1
//	cluster id   string
//	rpc address  string
//	incarnation  string
//	roles        uvarint count, then that many strings
//	flags        1 byte: bit 0 = leaving
//
// Decoders ignore bytes after the flags and flag bits they do not know:
// later versions may only append.
//
// # Profiles and failure-detection times
//
// A crashed node is probed (each member probes one other per probe
// interval, in a shuffled round), fails the probe (probe timeout, then
// indirect and TCP probes until the interval ends), is suspected, and is
// declared dead when the suspicion timeout runs out. That timeout is
// SuspicionMult × max(1, log10 N) × probe interval once enough other members
// confirm the suspicion (SuspicionMult−2 of them, none when N−2 is fewer),
// and SuspicionMaxTimeoutMult times that without confirmations.
//
//	profile  memberlist config             probe      suspicion (N<10)  dead after (N<10)
//	lan      DefaultLANConfig, unchanged   1 s/500ms  4 s … 24 s        typically 5–6 s; at worst 2(N−1)+1+24 s
//	local    DefaultLocalConfig, faster    200/100ms  0.6 s … 1.8 s     typically ~1 s; at worst 0.4(N−1)+0.2+1.8 s
//
// The local profile also gossips every 50 ms, syncs state every 5 s, uses
// a 1 s TCP timeout and remembers dead nodes for 5 s; measured on loopback
// under the race detector with 3 nodes, survivors saw a crashed node dead
// after 0.95–1.2 s. It is for nodes on one machine (tests, floe dev):
// across a network, a one-second stall could get a healthy node declared
// dead. A graceful leave is seen within a few gossip intervals in both
// profiles. memberlist lengthens its probe interval (up to 8×) on a node
// that finds itself slow, which stretches these times on an overloaded
// node.
//
// # Logging
//
// memberlist logs through a *log.Logger whose lines ("[WARN] memberlist:
// ...") are routed to Config.Logger with their level mapped to slog's
// (DEBUG, INFO, WARN, ERR/ERROR; untagged lines at debug) and the
// attribute component=memberlist.
package gossip
