package meta

import (
	"fmt"
	"testing"

	"github.com/floedb/floe/transport/pb"
)

func lakeTable(buckets int32, enabled bool, tasks ...*pb.LakeTask) *pb.TableRecord {
	t := &pb.TableRecord{Id: 5, Database: "app", Name: "events", Buckets: buckets, Replication: 3, Checks: 6,
		Properties: map[string]string{"datalake.enabled": fmt.Sprint(enabled)}}
	if len(tasks) > 0 {
		t.Lake = &pb.LakeState{Tasks: tasks}
	}
	return t
}

func describeTasks(tasks []*pb.LakeTask) string {
	s := ""
	for _, t := range tasks {
		s += fmt.Sprintf("%d:[%d,%d)@%d ", t.GetIndex(), t.GetFirstBucket(), t.GetEndBucket(), t.GetNodeId())
	}
	return s
}

// TestPlanLakeTasks: a lake-enabled table gets one task per tablet node
// (at most one per bucket) over even ranges, on the live node that leads
// the most of its buckets, then by load; a task keeps a live node (even
// when leaders move), and one whose node died goes to a live one chosen
// so; a table without the lake has none.
func TestPlanLakeTasks(t *testing.T) {
	tablets := []uint32{1, 2, 3}
	for _, tt := range []struct {
		name  string
		table *pb.TableRecord
		live  []uint32
		load  map[uint32]int
		want  string
		// leader of each bucket; nil: none known
		leader func(int32) uint32
	}{
		{"new", lakeTable(8, true), tablets, nil, "0:[0,2)@1 1:[2,5)@2 2:[5,8)@3 ", nil},
		{"fewer buckets than nodes", lakeTable(2, true), tablets, nil, "0:[0,1)@1 1:[1,2)@2 ", nil},
		{"by load", lakeTable(2, true), tablets, map[uint32]int{1: 4, 2: 1}, "0:[0,1)@3 1:[1,2)@2 ", nil},
		{"kept", lakeTable(8, true, &pb.LakeTask{Index: 0, NodeId: 3}, &pb.LakeTask{Index: 1, NodeId: 3}, &pb.LakeTask{Index: 2, NodeId: 1}),
			tablets, nil, "0:[0,2)@3 1:[2,5)@3 2:[5,8)@1 ", nil},
		{"dead node's task moves", lakeTable(8, true, &pb.LakeTask{Index: 0, NodeId: 1}, &pb.LakeTask{Index: 1, NodeId: 2}, &pb.LakeTask{Index: 2, NodeId: 3}),
			[]uint32{1, 3}, nil, "0:[0,2)@1 1:[2,5)@3 2:[5,8)@3 ", nil},
		{"no live node: kept", lakeTable(8, true, &pb.LakeTask{Index: 0, NodeId: 1}, &pb.LakeTask{Index: 1, NodeId: 2}, &pb.LakeTask{Index: 2, NodeId: 3}),
			nil, nil, "0:[0,2)@1 1:[2,5)@2 2:[5,8)@3 ", nil},
		{"lake off", lakeTable(8, false, &pb.LakeTask{Index: 0, NodeId: 1}), tablets, nil, "", nil},
		{"on the leaders", lakeTable(3, true), tablets, map[uint32]int{1: 4}, "0:[0,1)@3 1:[1,2)@1 2:[2,3)@2 ",
			func(b int32) uint32 { return []uint32{3, 1, 2}[b] }},
		{"the leader of most", lakeTable(6, true), []uint32{1, 2}, nil, "0:[0,2)@2 1:[2,4)@1 2:[4,6)@2 ",
			func(b int32) uint32 { return []uint32{2, 2, 1, 3, 2, 2}[b] }},
		{"kept, whoever leads", lakeTable(3, true, &pb.LakeTask{Index: 0, NodeId: 1}, &pb.LakeTask{Index: 1, NodeId: 2}, &pb.LakeTask{Index: 2, NodeId: 3}),
			tablets, nil, "0:[0,1)@1 1:[1,2)@2 2:[2,3)@3 ", func(b int32) uint32 { return 3 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			load := tt.load
			if load == nil {
				load = map[uint32]int{}
			}
			got, err := planLakeTasks(tt.table, tablets, tt.live, load, tt.leader)
			if err != nil || describeTasks(got) != tt.want {
				t.Fatalf("plan %q, %v; want %q", describeTasks(got), err, tt.want)
			}
		})
	}
}
