package gossip

import "github.com/floedb/floe/internal/pkgerr"

var (
	// ErrClosed: the Gossip is closed.
	ErrClosed = pkgerr.New("gossip", "closed")
	// ErrLeft: the node has left the pool; it cannot join again without a
	// new Gossip.
	ErrLeft = pkgerr.New("gossip", "node has left")
	// ErrMetaTooLarge: the node meta (RPC address, roles, incarnation and
	// cluster id) does not fit in memberlist's 512 bytes.
	ErrMetaTooLarge = pkgerr.New("gossip", "node meta too large")
	// ErrInvalidMeta: a peer's node meta could not be decoded.
	ErrInvalidMeta = pkgerr.New("gossip", "invalid node meta")
	// ErrForeignCluster: a peer belongs to another cluster.
	ErrForeignCluster = pkgerr.New("gossip", "node of another cluster")
)
