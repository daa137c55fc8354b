package meta

import (
	"context"
	"slices"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// UnregisteredVoters returns the metadata voters that have not registered
// as nodes yet, and how many voters there are. A new cluster's voters are
// its --bootstrap-expect founders: until each has registered, its tablet
// role (if it has one) is not known, and a table created now would be
// placed on fewer nodes than the cluster has.
func UnregisteredVoters(ctx context.Context, n *raftmeta.Node) (missing []uint32, voters int, err error) {
	servers, err := n.Servers(ctx)
	if err != nil {
		return nil, 0, err
	}
	nodes := n.State().Nodes()
	for _, sv := range servers {
		if !sv.Voter {
			continue
		}
		voters++
		if !slices.ContainsFunc(nodes, func(nd *pb.NodeRecord) bool { return nd.GetId() == sv.ID }) {
			missing = append(missing, sv.ID)
		}
	}
	return missing, voters, nil
}

// expectedTabletNodes is how many tablet nodes the cluster has or is about
// to have: the registered ones, and the voters not registered yet.
func expectedTabletNodes(ctx context.Context, n *raftmeta.Node) (int, error) {
	missing, _, err := UnregisteredVoters(ctx, n)
	if err != nil {
		return 0, err
	}
	tablets := 0
	for _, nd := range n.State().Nodes() {
		if slices.Contains(nd.GetRoles(), metastate.RoleTablet) {
			tablets++
		}
	}
	return tablets + len(missing), nil
}
