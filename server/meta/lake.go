package meta

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/floedb/floe/raftmeta"
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// lakeAssignEvery paces the controller's lake task assignment rounds.
const lakeAssignEvery = 2 * time.Second

// LakePrefix is where a table's lake lives in the remote store: under
// its database, named by the table and its id, so a table dropped and
// created again never meets the old one's files.
func LakePrefix(database, table string, id uint64) string {
	return fmt.Sprintf("lake/%s/%s-%d", database, table, id)
}

// planLakeTasks is the tiering tasks a table should have (docs/lake.md):
// none unless it is lake-enabled; else one task per registered tablet
// node (at most one per bucket) over even bucket ranges. A task keeps its
// node while that node is live; one whose node is not goes to the live
// tablet node that leads the most of its buckets (leader, nil for none
// known: its rounds then read those from their own node, not over the
// network), then with the fewest tasks (load, across tables, which it
// updates), the lowest id among equals. No live node: the task keeps its
// node, and waits. The plan is a function of its inputs only, so a new
// controller plans what the old one did.
func planLakeTasks(t *pb.TableRecord, tablets []uint32, live []uint32, load map[uint32]int, leader func(bucket int32) uint32) ([]*pb.LakeTask, error) {
	props, err := metastate.TableProperties(t)
	if err != nil || !props.DataLake || len(tablets) == 0 {
		return nil, err
	}
	buckets := t.GetBuckets()
	n := min(int32(len(tablets)), buckets)
	cur := map[uint32]*pb.LakeTask{}
	for _, task := range t.GetLake().GetTasks() {
		cur[task.GetIndex()] = task
	}
	out := make([]*pb.LakeTask, 0, n)
	for i := range n {
		task := &pb.LakeTask{Index: uint32(i), FirstBucket: buckets * i / n, EndBucket: buckets * (i + 1) / n}
		if c := cur[task.GetIndex()]; c != nil {
			task.NodeId = c.GetNodeId()
		}
		if !slices.Contains(live, task.GetNodeId()) && len(live) > 0 {
			leads := map[uint32]int{}
			for b := task.GetFirstBucket(); leader != nil && b < task.GetEndBucket(); b++ {
				leads[leader(b)]++
			}
			task.NodeId = slices.MinFunc(live, func(a, b uint32) int {
				return cmp.Or(cmp.Compare(leads[b], leads[a]), cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
			})
		}
		load[task.GetNodeId()]++
		out = append(out, task)
	}
	return out, nil
}

// sameLakeTasks reports whether two task lists assign the same ranges to
// the same nodes (epochs aside).
func sameLakeTasks(a, b []*pb.LakeTask) bool {
	return slices.EqualFunc(a, b, func(x, y *pb.LakeTask) bool {
		return x.GetIndex() == y.GetIndex() && x.GetFirstBucket() == y.GetFirstBucket() &&
			x.GetEndBucket() == y.GetEndBucket() && x.GetNodeId() == y.GetNodeId()
	})
}

// assignLakeTasks runs one round of lake task assignment over every table
// with a lake or lake tasks: it proposes AssignLakeTasks where the plan
// differs from what is committed (a refusal: the table changed meanwhile,
// and the next round sees it).
func (r *Role) assignLakeTasks(ctx context.Context, n *raftmeta.Node, live []uint32) error {
	type assignment struct {
		table *pb.TableRecord
		tasks []*pb.LakeTask
	}
	var todo []assignment
	err := n.State().Read(func(v *metastate.View) error {
		nodes, err := v.Nodes()
		if err != nil {
			return err
		}
		var tablets []uint32
		for _, rec := range nodes {
			if slices.Contains(rec.GetRoles(), metastate.RoleTablet) {
				tablets = append(tablets, rec.GetId())
			}
		}
		dbs, err := v.Databases()
		if err != nil {
			return err
		}
		load := map[uint32]int{} // tasks per node, of the tables planned so far
		var tables []*pb.TableRecord
		for _, db := range dbs {
			ts, err := v.Tables(db.GetName())
			if err != nil {
				return err
			}
			tables = append(tables, ts...)
		}
		for _, t := range tables {
			var leader func(int32) uint32
			if len(t.GetPartitionKeys()) == 0 {
				// Read only when a task needs a node.
				var buckets []*pb.BucketRecord
				read := false
				leader = func(b int32) uint32 {
					if !read {
						buckets, _ = v.Buckets(t.GetId())
						read = true
					}
					if int(b) < len(buckets) && buckets[b].GetBucket() == b {
						return buckets[b].GetLeader()
					}
					return 0
				}
			}
			tasks, err := planLakeTasks(t, tablets, live, load, leader)
			if err != nil {
				r.log.Warn("controller: planning a table's lake tasks", "table", t.GetDatabase()+"."+t.GetName(), "err", err)
				continue
			}
			if !sameLakeTasks(tasks, t.GetLake().GetTasks()) {
				todo = append(todo, assignment{t, tasks})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, a := range todo {
		t := a.table
		id, prefix := t.GetLake().GetTableUuid(), t.GetLake().GetPrefix()
		if t.GetLake() == nil {
			id, prefix = uuid.NewString(), LakePrefix(t.GetDatabase(), t.GetName(), t.GetId())
		}
		if err := r.proposeAuto(ctx, n, &pb.Command{RequestId: []byte(NewID()), Op: &pb.Command_AssignLakeTasks{AssignLakeTasks: &pb.AssignLakeTasks{
			Database: t.GetDatabase(), Name: t.GetName(), TableId: t.GetId(), Tasks: a.tasks, TableUuid: id, Prefix: prefix}}}); err != nil {
			return fmt.Errorf("assign the lake tasks of %s.%s: %w", t.GetDatabase(), t.GetName(), err)
		}
		r.log.Info("controller: lake tasks assigned", "table", t.GetDatabase()+"."+t.GetName(), "tasks", len(a.tasks))
	}
	return nil
}
