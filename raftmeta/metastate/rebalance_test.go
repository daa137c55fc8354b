package metastate

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/floedb/floe/transport/pb"
)

// genPlanBuckets draws buckets over ids (any subset, some short of their
// replication, some on nodes outside ids: dead ones, numbered above 1000).
func genPlanBuckets(t *rapid.T, ids []uint32) []PlanBucket {
	n := rapid.IntRange(0, 60).Draw(t, "buckets")
	out := make([]PlanBucket, n)
	for i := range out {
		replication := rapid.IntRange(1, len(ids)+1).Draw(t, "replication")
		pool := append(slices.Clone(ids), 1001, 1002)
		replicas := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 1, replication, rapid.ID[uint32]).Draw(t, "replicas")
		out[i] = PlanBucket{TableID: uint64(i/8 + 1), Bucket: int32(i % 8), Replicas: replicas, Replication: replication}
	}
	return out
}

// applyPlan is buckets after moves.
func applyPlan(buckets []PlanBucket, moves []PlannedMove) []PlanBucket {
	out := slices.Clone(buckets)
	for _, m := range moves {
		for i := range out {
			if out[i].TableID == m.TableID && out[i].Bucket == m.Bucket {
				out[i].Replicas = slices.Clone(m.To)
			}
		}
	}
	return out
}

// planLoad counts replicas and preferred leaders per node of nodes.
func planLoad(nodes []PlacementNode, buckets []PlanBucket) map[uint32]NodeLoad {
	load := map[uint32]NodeLoad{}
	for _, n := range nodes {
		load[n.ID] = NodeLoad{}
	}
	for _, b := range buckets {
		for i, r := range b.Replicas {
			l, ok := load[r]
			if !ok {
				continue
			}
			l.Replicas++
			if i == 0 {
				l.Leaders++
			}
			load[r] = l
		}
	}
	return load
}

// TestPlanMovesRules: every planned target has distinct replicas, adds
// only nodes of Nodes, leaves no replica on an evacuated node that another
// node could take, fills short buckets where nodes are left, never narrows
// a bucket's racks when balancing, and planning again from the result
// plans nothing.
func TestPlanMovesRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t, 8, rapid.IntRange(0, 3).Draw(t, "racks"))
		var ids []uint32
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		buckets := genPlanBuckets(t, ids)
		evacuate := rapid.SliceOfDistinct(rapid.SampledFrom(ids), rapid.ID[uint32]).Draw(t, "evacuate")
		if len(evacuate) == len(ids) {
			evacuate = evacuate[1:]
		}
		req := PlanRequest{Nodes: nodes, Evacuate: evacuate, Balance: rapid.Bool().Draw(t, "balance")}
		moves := PlanMoves(req, buckets)
		after := applyPlan(buckets, moves)
		usable := len(ids) - len(evacuate)
		for i, b := range after {
			orig := buckets[i].Replicas
			for j, r := range b.Replicas {
				if slices.Contains(b.Replicas[:j], r) {
					t.Fatalf("bucket %d: node %d twice in %v", i, r, b.Replicas)
				}
				if !slices.Contains(orig, r) && !slices.Contains(ids, r) {
					t.Fatalf("bucket %d: moved to node %d, not one of the nodes", i, r)
				}
				if !slices.Contains(orig, r) && slices.Contains(evacuate, r) {
					t.Fatalf("bucket %d: moved to node %d, which is evacuated", i, r)
				}
			}
			onUsable := 0
			for _, r := range b.Replicas {
				if slices.Contains(ids, r) && !slices.Contains(evacuate, r) {
					onUsable++
				}
			}
			for _, r := range b.Replicas {
				if slices.Contains(evacuate, r) && onUsable < usable {
					t.Fatalf("bucket %d: %v keeps evacuated node %d while %d nodes are usable", i, b.Replicas, r, usable)
				}
			}
			if want := min(b.Replication, len(b.Replicas)+usable-onUsable); len(b.Replicas) < want {
				t.Fatalf("bucket %d: %v short of replication %d", i, b.Replicas, b.Replication)
			}
		}
		if again := PlanMoves(req, after); len(again) > 0 {
			t.Fatalf("planning again moves %d buckets, first %+v", len(again), again[0])
		}
	})
}

// TestPlanMovesBalances: without racks, a balancing plan leaves replica
// counts over the nodes within one; with every node in every bucket,
// preferred leaders too.
func TestPlanMovesBalances(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := genNodes(t, 8, 0)
		var ids []uint32
		for _, n := range nodes {
			ids = append(ids, n.ID)
		}
		full := rapid.Bool().Draw(t, "full")
		var buckets []PlanBucket
		if full {
			for i := range rapid.IntRange(0, 40).Draw(t, "buckets") {
				perm := rapid.Permutation(ids).Draw(t, "replicas")
				buckets = append(buckets, PlanBucket{TableID: 1, Bucket: int32(i), Replicas: perm, Replication: len(ids)})
			}
		} else {
			buckets = genPlanBuckets(t, ids)
		}
		after := applyPlan(buckets, PlanMoves(PlanRequest{Nodes: nodes, Balance: true}, buckets))
		load := planLoad(nodes, after)
		if d := spread(nodes, load, func(l NodeLoad) int { return l.Replicas }); d > 1 {
			t.Fatalf("replica counts differ by %d after balancing: %v", d, load)
		}
		if d := spread(nodes, load, func(l NodeLoad) int { return l.Leaders }); full && d > 1 {
			t.Fatalf("leader counts differ by %d after balancing: %v", d, load)
		}
	})
}

// TestPlanMovesScaleOut: three nodes' buckets spread over five once two
// join, moving no more replicas than the new nodes' fair share, and a
// decommission empties a node onto the others.
func TestPlanMovesScaleOut(t *testing.T) {
	three := []PlacementNode{{ID: 1}, {ID: 2}, {ID: 3}}
	placed, err := Place(three, nil, 30, 3)
	if err != nil {
		t.Fatal(err)
	}
	var buckets []PlanBucket
	for i, r := range placed {
		buckets = append(buckets, PlanBucket{TableID: 7, Bucket: int32(i), Replicas: r, Replication: 3})
	}
	five := append(slices.Clone(three), PlacementNode{ID: 4}, PlacementNode{ID: 5})
	moves := PlanMoves(PlanRequest{Nodes: five, Balance: true}, buckets)
	load := planLoad(five, applyPlan(buckets, moves))
	for id := uint32(1); id <= 5; id++ {
		if l := load[id]; l.Replicas != 18 || l.Leaders != 6 {
			t.Errorf("node %d: %d replicas, %d leaders after the plan, want 18 and 6", id, l.Replicas, l.Leaders)
		}
	}
	moved := 0
	for _, m := range moves {
		for _, r := range m.To {
			if !slices.Contains(m.From, r) {
				moved++
			}
		}
	}
	if moved != 36 {
		t.Errorf("%d replicas copied, want 36 (18 to each new node)", moved)
	}

	after := applyPlan(buckets, moves)
	off := PlanMoves(PlanRequest{Nodes: five, Evacuate: []uint32{5}}, after)
	load = planLoad(five, applyPlan(after, off))
	if load[5].Replicas != 0 || len(off) != 18 {
		t.Errorf("decommissioning node 5: %d moves, %d replicas left on it; want 18 and 0", len(off), load[5].Replicas)
	}
}

// TestPlanMovesKeepsRacks: a bucket spread over three racks keeps three
// when balancing, and an evacuated replica's place goes to its rack's
// other node.
func TestPlanMovesKeepsRacks(t *testing.T) {
	nodes := []PlacementNode{{ID: 1, Rack: "a"}, {ID: 2, Rack: "b"}, {ID: 3, Rack: "c"}, {ID: 4, Rack: "a"}}
	buckets := []PlanBucket{{TableID: 1, Bucket: 0, Replicas: []uint32{1, 2, 3}, Replication: 3}}
	moves := PlanMoves(PlanRequest{Nodes: nodes, Evacuate: []uint32{2}}, buckets)
	if len(moves) != 1 || !slices.Equal(moves[0].To, []uint32{1, 4, 3}) {
		t.Fatalf("evacuating node 2 planned %+v, want [1 4 3] (no other node in rack b: any node, rack a's)", moves)
	}
	nodes = append(nodes, PlacementNode{ID: 5, Rack: "b"})
	moves = PlanMoves(PlanRequest{Nodes: nodes, Evacuate: []uint32{2}}, buckets)
	if len(moves) != 1 || !slices.Equal(moves[0].To, []uint32{1, 5, 3}) {
		t.Fatalf("evacuating node 2 planned %+v, want [1 5 3] (rack b's other node)", moves)
	}
}

// decommission is a DrainNode of node id with decommission.
func decommission(id uint32, live ...uint32) *pb.Command {
	return &pb.Command{Op: &pb.Command_DrainNode{DrainNode: &pb.DrainNode{NodeId: id, LiveNodes: live, Decommission: true}}}
}

// TestDecommissionMarksANode: a decommission drains the node and marks it
// for good: a restart's registration keeps both marks, new tables are
// placed on the other nodes, the plan input evacuates it, and a cancel
// clears both.
func TestDecommissionMarksANode(t *testing.T) {
	h := newHarness(t)
	h.ok(initCluster("c"))
	h.tabletNodes(4)
	h.ok(createDB("db"))
	h.ok(createTable(ordersTable("db", "before", func(c *pb.CreateTable) { c.Buckets, c.Replication = 4, 3 })))
	h.ok(decommission(4, 1, 2, 3, 4))
	h.ok(registerNode(4, "", RoleTablet)) // a restart
	n := h.node(4)
	if !n.GetDraining() || !n.GetDecommissioning() {
		t.Fatalf("after a restart node 4 is %v, want draining and decommissioning", n)
	}
	for _, b := range h.buckets() {
		if b.GetLeader() == 4 {
			t.Fatalf("bucket %d still led by the decommissioned node: %v", b.GetBucket(), b)
		}
	}
	res := h.ok(createTable(ordersTable("db", "after", func(c *pb.CreateTable) { c.Buckets, c.Replication = 6, 3 })))
	for b := range int32(6) {
		if r := h.bucket(res.GetTable().GetId(), b).GetReplicas(); slices.Contains(r, 4) {
			t.Fatalf("new table's bucket %d placed on the decommissioned node: %v", b, r)
		}
	}
	var moves []PlannedMove
	if err := h.s.Read(func(v *View) error {
		req, buckets, err := v.PlanInput([]uint32{1, 2, 3, 4}, false)
		if err != nil {
			return err
		}
		if !slices.Equal(req.Evacuate, []uint32{4}) || len(req.Nodes) != 3 {
			t.Fatalf("plan input evacuates %v over %v, want node 4 over 1, 2, 3", req.Evacuate, req.Nodes)
		}
		moves = PlanMoves(req, buckets)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, b := range h.buckets() {
		if slices.Contains(b.GetReplicas(), 4) {
			held++
		}
	}
	if len(moves) != held || held == 0 {
		t.Fatalf("%d moves planned for the %d buckets node 4 holds", len(moves), held)
	}
	h.ok(undrainNode(4))
	if n := h.node(4); n.GetDraining() || n.GetDecommissioning() {
		t.Fatalf("after a cancel node 4 is %v, want neither mark", n)
	}
}

// TestClusterSettings: a setting set is kept, setting it again changes
// nothing, and an unset field keeps its value.
func TestClusterSettings(t *testing.T) {
	h := newHarness(t)
	h.ok(initCluster("c"))
	on, off := true, false
	set := func(v *bool) *pb.CommandResult {
		return h.ok(&pb.Command{Op: &pb.Command_SetClusterSettings{SetClusterSettings: &pb.SetClusterSettings{AutoElectLeaders: v}}})
	}
	if res := set(&on); res.GetUnchanged() || !res.GetSettings().GetAutoElectLeaders() {
		t.Fatalf("turning auto-elect on: %v", res)
	}
	if res := set(&on); !res.GetUnchanged() {
		t.Fatalf("turning it on again changed something: %v", res)
	}
	if res := set(nil); !res.GetUnchanged() || !res.GetSettings().GetAutoElectLeaders() {
		t.Fatalf("naming no setting: %v", res)
	}
	set(&off)
	if err := h.s.Read(func(v *View) error {
		s, err := v.ClusterSettings()
		if err == nil && s.GetAutoElectLeaders() {
			t.Fatalf("settings %v after turning auto-elect off", s)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// node reads node id's registration.
func (h *harness) node(id uint32) *pb.NodeRecord {
	h.t.Helper()
	var n *pb.NodeRecord
	if err := h.s.Read(func(v *View) error {
		var err error
		n, err = v.Node(id)
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	return n
}
