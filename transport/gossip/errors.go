package gossip

import "errors"

var (
	// ErrClosed: the Gossip is closed.
	ErrClosed = errors.New("gossip: closed")
	// ErrLeft: the node has left the pool; it cannot join again without a
	// new Gossip.
	ErrLeft = errors.New("gossip: node has left")
	// ErrMetaTooLarge: the node meta (RPC address, roles, incarnation and
	// cluster id) does not fit in memberlist's 512 bytes.
	ErrMetaTooLarge = errors.New("gossip: node meta too large")
	// ErrInvalidMeta: a peer's node meta could not be decoded.
	ErrInvalidMeta = errors.New("gossip: invalid node meta")
	// ErrForeignCluster: a peer belongs to another cluster.
	ErrForeignCluster = errors.New("gossip: node of another cluster")
)
