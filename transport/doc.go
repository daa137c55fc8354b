// Package transport is Floe's network plumbing: one listening port shared by
// DRPC and Raft, a DRPC server with the handler chain every service runs
// behind, a pool of client connections, and the one table that maps errors
// to wire codes. It holds no business logic; services live in server/ and
// their messages in transport/pb.
//
// # One port, two protocols
//
// Every node listens on a single TCP port (Listen). The first 8 bytes of a
// connection say what it is:
//
//	"DRPC!!!1"  drpcmigrate.DRPCHeader: DRPC calls (all services)
//	"FLOERAFT"  RaftHeader: hashicorp/raft's NetworkTransport
//
// drpcmigrate.ListenMux routes each connection by that prefix to the
// Listener's DRPC or Raft net.Listener, with the prefix consumed; a
// connection with any other prefix is closed. A connection that has not sent
// its prefix, or has not been taken by its protocol, within
// ListenerConfig.HandshakeTimeout (10 s) is closed too, so idle or slow
// clients cannot pile up. One port means one address per node to configure,
// advertise and open in a firewall, and one place to add TLS later.
//
// # Connection limits
//
// Every state a connection can be in is bounded in time or in number, and
// no bound makes the accept loop wait:
//
//   - no protocol yet: HandshakeTimeout, and at most MaxPendingConns (1024);
//     a new one closes the oldest, which a real client (it sends its prefix
//     at once) never is for long;
//   - DRPC: at most MaxConns (4096, --max-rpc-conns); the first call of one
//     more is answered UNAVAILABLE naming the flag. A request message once
//     started must arrive within ServerConfig.MessageTimeout (30 s,
//     --rpc-message-timeout), and a connection between calls closes after
//     ServerConfig.IdleTimeout;
//   - Raft handshake: HandshakeTimeout, at most 64 at once, a new one
//     closing the oldest, so silent connections cannot delay a real peer;
//   - Raft: at most MaxRaftConns (64, --max-raft-conns), a share DRPC
//     clients cannot take; one more closes the idlest.
//
// # Raft
//
// The Raft stream layer, which takes over the Raft route of a Listener and
// checks that a peer belongs to the cluster, lives in transport/raftnet:
// only nodes import it, so the SDK, which imports transport, never compiles
// hashicorp/raft.
//
// # Errors on the wire
//
// A failed call carries a pb.ErrorCode as its DRPC error code and a message
// as its text. Handlers return ordinary Go errors; the Server passes each
// through ToWire (an *Error or an error with a WireCode method keeps its
// code, context errors become TIMEOUT, anything else INTERNAL). Clients get
// *Error values back (FromWire; the Pool applies it), check them with
// errors.Is(err, ErrNotLeader) and retry when IsRetriable. Connection
// failures read as UNAVAILABLE, which is retriable.
//
// INTERNAL is code 0, which DRPC sends as "no code". DRPC's own
// drpcerr.Unimplemented (12) would read as TOO_LARGE; ToWire never lets such
// a code through, since only *Error and WireCode errors keep theirs.
//
// # Server
//
// Server wraps its drpcmux.Mux in a handler that recovers panics (the caller
// gets INTERNAL, the server carries on), refuses calls whose metadata
// MetadataClusterID names another cluster than the node's (CLUSTER_MISMATCH),
// and applies ToWire. A request larger than ServerConfig.MaxMessageBytes is
// refused with TOO_LARGE while its bytes are still arriving: DRPC's own limit
// would only reset the connection (see sizelimit.go). A connection on which
// no call starts for ServerConfig.IdleTimeout is closed.
//
// # Pool
//
// A DRPC connection carries one call at a time. Pool.Conn(addr) is a
// drpc.Conn that any number of goroutines may use at once: each call borrows
// an idle connection to addr or dials one (up to MaxConnsPerAddr, then
// waits), sends the node's cluster id as metadata, and gives the connection
// back unless it broke. Requests over MaxMessageBytes are refused before
// they are sent.
package transport
