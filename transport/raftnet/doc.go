// Package raftnet carries hashicorp/raft's NetworkTransport over the Raft
// route of a transport.Listener: StreamLayer is a raft.StreamLayer whose
// connections are checked to come from the same cluster.
//
// It is a package of its own so that hashicorp/raft stays out of the
// packages the SDK imports: the client needs transport's DRPC plumbing and
// nothing of Raft (see "The SDK's dependencies" in docs/architecture.md).
//
// # Handshake
//
// After its 8-byte prefix (transport.RaftHeader) a Raft connection
// introduces its cluster and the incarnation it expects to reach:
//
//	"FLOERAFT" | n (1 byte) | cluster id (n bytes) | m (1 byte) | incarnation (m bytes)   dialer → acceptor
//	0x01                                                                                  acceptor → dialer
//
// StreamLayer writes this when dialing and checks it when accepting. A
// connection from another cluster, or one meant for an earlier incarnation
// of this node, is closed without an answer and logged; the dialer's Dial
// then fails. Handshakes run in their own goroutines, so a slow peer holds
// up no one else. Accept hands a connection to Raft once the first byte of
// its first RPC has arrived (within the handshake timeout): Raft's
// transport gives each connection a 256 KiB buffer, which an idle one
// should not hold.
//
// # Limits
//
//   - handshakes: the Listener's HandshakeTimeout, at most 64 at once, a new
//     one closing the oldest, so silent connections cannot delay a real
//     peer;
//   - connections handed to Raft: at most the Listener's MaxRaftConns (64,
//     --max-raft-conns), a share DRPC clients cannot take; one more closes
//     the idlest (conns.go).
package raftnet
