package server

import (
	"net"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/server/replica"
	"github.com/floedb/floe/server/replica/kvreplica"
	"github.com/floedb/floe/transport"
	"github.com/floedb/floe/transport/pb"
)

// Bounds of what one Hello may tell a node about its cluster.
const (
	// maxHelloPeers bounds the peers of one Hello and the peers a node
	// remembers: far more meta and tablet nodes than a cluster forms with.
	maxHelloPeers = 1024
	// maxHelloRoles bounds the roles of a Hello (there are two).
	maxHelloRoles = 8
	// maxPeerAddressBytes bounds a peer's address (a host:port).
	maxPeerAddressBytes = 256
)

// requestFieldLimits are the repeated request fields the transport counts
// before decoding a request: each element costs many times its encoded
// size once decoded, and a request over one of these limits is refused
// before it costs anything. The handlers' own checks (kvreplica's
// MaxLookupKeys, metastate's table bounds) stay: these only refuse
// early what they would refuse anyway.
func requestFieldLimits() []transport.FieldLimit {
	return []transport.FieldLimit{
		{Field: "floe.v1.FetchRequest.buckets", Max: replica.MaxFetchBuckets},
		{Field: "floe.v1.FetchRequest.forgotten", Max: replica.MaxFetchBuckets},
		{Field: "floe.v1.LookupRequest.keys", Max: kvreplica.MaxLookupKeys},
		{Field: "floe.v1.HelloRequest.peers", Max: maxHelloPeers},
		{Field: "floe.v1.HelloRequest.roles", Max: maxHelloRoles},
		{Field: "floe.v1.CreateTableRequest.properties", Max: metastate.MaxProperties},
		{Field: "floe.v1.CreateTableRequest.primary_key", Max: 1024},
		{Field: "floe.v1.CreateTableRequest.bucket_key", Max: 1024},
		{Field: "floe.v1.AlterTableRequest.set_properties", Max: metastate.MaxProperties},
		{Field: "floe.v1.AlterTableRequest.reset_properties", Max: metastate.MaxProperties},
		{Field: "floe.v1.AlterTableRequest.add_columns", Max: 1024},
	}
}

// usablePeer reports whether a peer met through Hello may be remembered:
// a node id, a host:port address of bounded size, known roles only. A
// peer that fails is ignored, not refused: the Hello's sender may know
// better peers.
func usablePeer(p *pb.PeerInfo) bool {
	if p == nil || p.NodeId == 0 || p.RpcAddress == "" || len(p.RpcAddress) > maxPeerAddressBytes || len(p.Roles) > maxHelloRoles {
		return false
	}
	if _, _, err := net.SplitHostPort(p.RpcAddress); err != nil {
		return false
	}
	for _, r := range p.Roles {
		if r != RoleMeta && r != RoleTablet {
			return false
		}
	}
	return true
}
