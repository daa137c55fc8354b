package metastate

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/floedb/floe/transport/pb"
)

// genNodes draws 1 to max nodes with distinct ids, racks drawn from racks
// (none when racks is 0).
func genNodes(t *rapid.T, max, racks int) []PlacementNode {
	ids := rapid.SliceOfNDistinct(rapid.Uint32Range(1, 1000), 1, max, rapid.ID[uint32]).Draw(t, "ids")
	nodes := make([]PlacementNode, len(ids))
	for i, id := range ids {
		nodes[i] = PlacementNode{ID: id}
		if racks > 0 {
			nodes[i].Rack = fmt.Sprint("rack", rapid.IntRange(0, racks-1).Draw(t, "rack"))
		}
	}
	return nodes
}

// checkReplicas checks that every bucket has replication distinct replicas,
// all among nodes, and adds them to load.
func checkReplicas(t *rapid.T, nodes []PlacementNode, out [][]uint32, buckets, replication int, load map[uint32]NodeLoad) {
	if len(out) != buckets {
		t.Fatalf("%d buckets, want %d", len(out), buckets)
	}
	for b, replicas := range out {
		if len(replicas) != replication {
			t.Fatalf("bucket %d: %d replicas, want %d", b, len(replicas), replication)
		}
		for i, r := range replicas {
			if !slices.ContainsFunc(nodes, func(n PlacementNode) bool { return n.ID == r }) {
				t.Fatalf("bucket %d: unknown node %d", b, r)
			}
			if slices.Contains(replicas[:i], r) {
				t.Fatalf("bucket %d: node %d twice in %v", b, r, replicas)
			}
		}
		l := load[replicas[0]]
		l.Leaders++
		load[replicas[0]] = l
		for _, r := range replicas {
			l := load[r]
			l.Replicas++
			load[r] = l
		}
	}
}

// spread is max - min of a per-node count.
func spread(nodes []PlacementNode, load map[uint32]NodeLoad, count func(NodeLoad) int) int {
	lo, hi := count(load[nodes[0].ID]), count(load[nodes[0].ID])
	for _, n := range nodes {
		lo, hi = min(lo, count(load[n.ID])), max(hi, count(load[n.ID]))
	}
	return hi - lo
}

// TestPlaceBalanced: without racks, tables of any replication placed one
// after the other keep replica and leader counts within one.
func TestPlaceBalanced(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t, 12, 0)
		load := map[uint32]NodeLoad{}
		for range rapid.IntRange(1, 6).Draw(t, "tables") {
			buckets := rapid.IntRange(0, 64).Draw(t, "buckets")
			replication := rapid.IntRange(1, len(nodes)).Draw(t, "replication")
			out, err := Place(nodes, load, buckets, replication)
			if err != nil {
				t.Fatal(err)
			}
			checkReplicas(t, nodes, out, buckets, replication, load)
			if d := spread(nodes, load, func(l NodeLoad) int { return l.Replicas }); d > 1 {
				t.Fatalf("replica counts differ by %d: %v", d, load)
			}
			if d := spread(nodes, load, func(l NodeLoad) int { return l.Leaders }); d > 1 {
				t.Fatalf("leader counts differ by %d: %v", d, load)
			}
		}
	})
}

// TestPlaceRacks: a bucket spans min(replication, racks) racks, so no two
// replicas share a rack when there are at least as many racks.
func TestPlaceRacks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t, 12, rapid.IntRange(1, 5).Draw(t, "racks"))
		if rapid.Bool().Draw(t, "one rackless node") {
			nodes[0].Rack = ""
		}
		racks := map[string]bool{}
		rackOf := map[uint32]string{}
		for _, n := range nodes {
			rack := n.Rack
			if rack == "" {
				rack = fmt.Sprint("own-", n.ID)
			}
			racks[rack], rackOf[n.ID] = true, rack
		}
		load := map[uint32]NodeLoad{}
		for range rapid.IntRange(1, 4).Draw(t, "tables") {
			buckets := rapid.IntRange(1, 32).Draw(t, "buckets")
			replication := rapid.IntRange(1, len(nodes)).Draw(t, "replication")
			out, err := Place(nodes, load, buckets, replication)
			if err != nil {
				t.Fatal(err)
			}
			checkReplicas(t, nodes, out, buckets, replication, load)
			for b, replicas := range out {
				used := map[string]bool{}
				for _, r := range replicas {
					used[rackOf[r]] = true
				}
				if want := min(replication, len(racks)); len(used) != want {
					t.Fatalf("bucket %d: replicas %v span %d racks, want %d", b, replicas, len(used), want)
				}
			}
		}
	})
}

// TestPlaceLoaded: from any existing load, every bucket is valid, the first
// bucket goes to least loaded nodes, and the node order does not matter.
func TestPlaceLoaded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t, 10, rapid.IntRange(0, 3).Draw(t, "racks"))
		load := map[uint32]NodeLoad{}
		for _, n := range nodes {
			r := rapid.IntRange(0, 20).Draw(t, "replicas")
			load[n.ID] = NodeLoad{Replicas: r, Leaders: rapid.IntRange(0, r).Draw(t, "leaders")}
		}
		buckets := rapid.IntRange(1, 20).Draw(t, "buckets")
		replication := rapid.IntRange(1, len(nodes)).Draw(t, "replication")
		out, err := Place(nodes, load, buckets, replication)
		if err != nil {
			t.Fatal(err)
		}
		shuffled := rapid.Permutation(nodes).Draw(t, "shuffled")
		again, err := Place(shuffled, load, buckets, replication)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(out, again, slices.Equal) {
			t.Fatalf("node order changed the placement:\n%v\n%v", out, again)
		}
		noRacks := !slices.ContainsFunc(nodes, func(n PlacementNode) bool { return n.Rack != "" })
		if noRacks {
			// The first bucket's replicas hold the lowest counts.
			counts := make([]int, 0, len(nodes))
			for _, n := range nodes {
				counts = append(counts, load[n.ID].Replicas)
			}
			slices.Sort(counts)
			var got []int
			for _, r := range out[0] {
				got = append(got, load[r].Replicas)
			}
			slices.Sort(got)
			if !slices.Equal(got, counts[:replication]) {
				t.Fatalf("first bucket on counts %v, lowest are %v", got, counts[:replication])
			}
		}
		checkReplicas(t, nodes, out, buckets, replication, load)
	})
}

func TestPlaceExamples(t *testing.T) {
	three := []PlacementNode{{ID: 3}, {ID: 1}, {ID: 2}}
	tests := []struct {
		name        string
		nodes       []PlacementNode
		load        map[uint32]NodeLoad
		buckets     int
		replication int
		want        [][]uint32
	}{
		{"full replication rotates leaders", three, nil, 3, 3, [][]uint32{{1, 2, 3}, {2, 1, 3}, {3, 1, 2}}},
		{"single replica round-robin", three, nil, 4, 1, [][]uint32{{1}, {2}, {3}, {1}}},
		{"least loaded first", three, map[uint32]NodeLoad{1: {Replicas: 2, Leaders: 1}, 2: {Replicas: 1, Leaders: 1}}, 1, 2, [][]uint32{{3, 2}}},
		{"racks before load", []PlacementNode{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}},
			map[uint32]NodeLoad{3: {Replicas: 5}}, 1, 2, [][]uint32{{1, 3}}},
		{"no buckets", three, nil, 0, 3, [][]uint32{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Place(tc.nodes, tc.load, tc.buckets, tc.replication)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlaceRefuses(t *testing.T) {
	three := []PlacementNode{{ID: 1}, {ID: 2}, {ID: 3}}
	tests := []struct {
		name        string
		nodes       []PlacementNode
		buckets     int
		replication int
		code        pb.ErrorCode
	}{
		{"replication above nodes", three, 1, 4, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS},
		{"no nodes", nil, 1, 1, pb.ErrorCode_ERROR_CODE_NOT_ENOUGH_REPLICAS},
		{"replication 0", three, 1, 0, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"negative buckets", three, -1, 1, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
		{"duplicate node", []PlacementNode{{ID: 1}, {ID: 1}}, 1, 1, pb.ErrorCode_ERROR_CODE_INVALID_REQUEST},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Place(tc.nodes, nil, tc.buckets, tc.replication)
			wantCode(t, err, tc.code)
		})
	}
}
