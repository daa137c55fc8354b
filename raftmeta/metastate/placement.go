package metastate

import (
	"cmp"
	"slices"
	"strconv"
)

// PlacementNode is a tablet node that can host replicas.
type PlacementNode struct {
	// ID is the node id.
	ID uint32
	// Rack is the node's failure domain; empty means a rack of its own.
	Rack string
}

// NodeLoad is what a node hosts already.
type NodeLoad struct {
	// Replicas is the number of bucket replicas assigned to the node.
	Replicas int
	// Leaders is the number of buckets whose preferred leader (first
	// replica) is the node.
	Leaders int
}

// Place assigns the replicas of buckets new buckets, replication replicas
// each, over the tablet nodes, given what the nodes host already (load, keyed
// by node id; a missing entry is an empty node). It returns one replica list
// per bucket, preferred leader first. It is a pure function: the same
// arguments give the same answer whatever the order of nodes.
//
// The algorithm is greedy and counts as it goes, so every bucket sees the
// replicas and leaders of the ones placed before it. For each bucket:
//
//  1. The leader is chosen first. Let t be the replica count of the
//     replication-th least loaded node: the nodes holding at most t replicas
//     are the ones a least-loaded replica set can contain. Among them the
//     node with the fewest leaders wins; ties go to the most replicas (a
//     node that falls behind on leaders while it collects follower replicas
//     would otherwise soon be too loaded to lead), then to the lowest id.
//  2. The other replicas are chosen one at a time. The candidates are the
//     nodes not in the bucket yet; if some of them sit in a rack the bucket
//     does not use yet, only those remain, so a bucket spans as many racks
//     as it can before any rack holds two of its replicas. A node without a
//     rack is a rack of its own. Among the candidates the node with the
//     fewest replicas wins; ties go to the most leaders (leaving the nodes
//     short of leaders free to lead later buckets), then to the lowest id.
//
// Without racks every bucket takes replicas from the least loaded nodes, so
// replica counts that start within one of each other stay within one. The
// tie-breaks keep leader counts within one as well; the property tests check
// both for sequences of tables with varying replication. With racks, each
// rack is visited before any is visited twice, the least loaded node of the
// rack first: replicas go round-robin over the racks.
//
// It fails when buckets is negative, replication is below 1 or above the
// number of nodes, or a node id is listed twice.
func Place(nodes []PlacementNode, load map[uint32]NodeLoad, buckets, replication int) ([][]uint32, error) {
	if buckets < 0 {
		return nil, errorf(codeInvalidRequest, "placement: negative bucket count %d", buckets)
	}
	if replication < 1 {
		return nil, errorf(codeInvalidRequest, "placement: replication %d is below 1", replication)
	}
	if replication > len(nodes) {
		return nil, errorf(codeNotEnoughReplicas,
			"placement: replication %d exceeds the %d nodes to place on", replication, len(nodes))
	}
	cands, err := placementCandidates(nodes, load)
	if err != nil {
		return nil, err
	}
	out := make([][]uint32, buckets)
	byLoad := make([]*candidate, len(cands))
	for b := range out {
		copy(byLoad, cands)
		slices.SortFunc(byLoad, followerOrder)
		threshold := byLoad[replication-1].replicas
		var leader *candidate
		for _, c := range cands {
			if c.replicas <= threshold && (leader == nil || leaderOrder(c, leader) < 0) {
				leader = c
			}
		}
		chosen := []*candidate{leader}
		usedRacks := map[string]bool{leader.rack: true}
		for len(chosen) < replication {
			chosen = append(chosen, nextFollower(cands, chosen, usedRacks))
		}
		replicas := make([]uint32, len(chosen))
		for i, c := range chosen {
			c.replicas++
			replicas[i] = c.id
		}
		leader.leaders++
		out[b] = replicas
	}
	return out, nil
}

// candidate is a node's running load during a placement.
type candidate struct {
	id       uint32
	rack     string
	replicas int
	leaders  int
}

// placementCandidates builds the candidates sorted by id.
func placementCandidates(nodes []PlacementNode, load map[uint32]NodeLoad) ([]*candidate, error) {
	cands := make([]*candidate, 0, len(nodes))
	for _, n := range nodes {
		rack := n.Rack
		if rack == "" {
			// NUL never starts a real rack name: a rackless node is a rack
			// of its own, apart from every named rack.
			rack = "\x00" + strconv.FormatUint(uint64(n.ID), 10)
		}
		l := load[n.ID]
		cands = append(cands, &candidate{id: n.ID, rack: rack, replicas: l.Replicas, leaders: l.Leaders})
	}
	slices.SortFunc(cands, func(a, b *candidate) int { return cmp.Compare(a.id, b.id) })
	for i := 1; i < len(cands); i++ {
		if cands[i].id == cands[i-1].id {
			return nil, errorf(codeInvalidRequest, "placement: node %d listed twice", cands[i].id)
		}
	}
	return cands, nil
}

// nextFollower picks the next replica of a bucket (step 2 of Place).
func nextFollower(cands, chosen []*candidate, usedRacks map[string]bool) *candidate {
	free := func(c *candidate) bool { return !slices.Contains(chosen, c) }
	newRack := false
	for _, c := range cands {
		if free(c) && !usedRacks[c.rack] {
			newRack = true
			break
		}
	}
	var best *candidate
	for _, c := range cands {
		if !free(c) || (newRack && usedRacks[c.rack]) {
			continue
		}
		if best == nil || followerOrder(c, best) < 0 {
			best = c
		}
	}
	usedRacks[best.rack] = true
	return best
}

// followerOrder: fewest replicas, then most leaders, then lowest id.
func followerOrder(a, b *candidate) int {
	if a.replicas != b.replicas {
		return a.replicas - b.replicas
	}
	if a.leaders != b.leaders {
		return b.leaders - a.leaders
	}
	return cmp.Compare(a.id, b.id)
}

// leaderOrder: fewest leaders, then most replicas, then lowest id.
func leaderOrder(a, b *candidate) int {
	if a.leaders != b.leaders {
		return a.leaders - b.leaders
	}
	if a.replicas != b.replicas {
		return b.replicas - a.replicas
	}
	return cmp.Compare(a.id, b.id)
}
