package metastate

import (
	"testing"

	"github.com/floedb/floe/transport/pb"
)

const (
	lakeUUID   = "2f6c8a51-58a9-4c1e-9d7e-3b1f0c9a7e42"
	lakePrefix = "lake/sales/events"
)

func assignLake(t *pb.TableRecord, tasks ...*pb.LakeTask) *pb.Command {
	return &pb.Command{Op: &pb.Command_AssignLakeTasks{AssignLakeTasks: &pb.AssignLakeTasks{
		Database: "sales", Name: t.GetName(), TableId: t.GetId(), Tasks: tasks, TableUuid: lakeUUID, Prefix: lakePrefix}}}
}

func commitLake(t *pb.TableRecord, task *pb.LakeTask, version int64, key string, offsets ...*pb.LakeOffset) *pb.Command {
	return &pb.Command{Op: &pb.Command_CommitLake{CommitLake: &pb.CommitLake{
		Database: "sales", Name: t.GetName(), TableId: t.GetId(), Task: task.GetIndex(), NodeId: task.GetNodeId(),
		TaskEpoch: task.GetEpoch(), ExpectedVersion: version, MetadataKey: key, Offsets: offsets}}}
}

func lakeTask(index uint32, first, end int32, node uint32) *pb.LakeTask {
	return &pb.LakeTask{Index: index, FirstBucket: first, EndBucket: end, NodeId: node}
}

// lakeFixture: sales.events, a lake-enabled log table of 4 buckets on
// three tablet nodes.
func lakeFixture(t *testing.T) (*harness, *pb.TableRecord) {
	h := ddlFixture(t)
	h.ok(eventsTable(func(c *pb.CreateTable) {
		c.Buckets = 4
		c.Properties = map[string]string{"datalake.enabled": "true", "datalake.freshness": "10s"}
	}))
	return h, h.table("events")
}

// TestLakeTasksAndCommits: tasks over disjoint ranges get epochs, which an
// unchanged task keeps and a moved one renews; a commit by the task's node
// at its epoch on the committed version moves the version, the metadata
// key and its buckets' lake offsets.
func TestLakeTasksAndCommits(t *testing.T) {
	h, tbl := lakeFixture(t)
	res := h.ok(assignLake(tbl, lakeTask(0, 0, 2, 1), lakeTask(1, 2, 4, 2)))
	lake := res.GetTable().GetLake()
	if lake.GetTableUuid() != lakeUUID || lake.GetPrefix() != lakePrefix || lake.GetVersion() != 0 || len(lake.GetTasks()) != 2 ||
		lake.GetTasks()[0].GetEpoch() != 1 || lake.GetTasks()[1].GetEpoch() != 2 {
		t.Fatalf("lake %v", lake)
	}
	t0, t1 := lake.GetTasks()[0], lake.GetTasks()[1]

	h.ok(commitLake(tbl, t0, 0, "lake/sales/events/metadata/a.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 100}, &pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 1, Offset: 7}))
	if b := h.bucket(tbl.GetId(), 0); b.GetLakeOffset() != 100 {
		t.Fatalf("bucket 0 lake offset %d", b.GetLakeOffset())
	}
	// Task 1 built on version 0 too: it lost the race and must rebase.
	wantRefused(t, h.apply(commitLake(tbl, t1, 0, "lake/sales/events/metadata/b.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 2, Offset: 5})), pb.ErrorCode_ERROR_CODE_FENCED, "version 0 expected, committed is 1")
	res = h.ok(commitLake(tbl, t1, 1, "lake/sales/events/metadata/b.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 2, Offset: 5}))
	if l := res.GetTable().GetLake(); l.GetVersion() != 2 || l.GetMetadataKey() != "lake/sales/events/metadata/b.metadata.json" || l.GetCommittedAtMs() == 0 {
		t.Fatalf("after two commits: %v", l)
	}
	if got := h.feedAt(h.index).GetBuckets(); len(got) != 1 || got[0].GetBucket() != 2 || got[0].GetLakeOffset() != 5 {
		t.Fatalf("the commit's feed lists buckets %v", got)
	}

	// Task 0 moves to node 3: a new epoch, and node 1 finishing late is
	// fenced; task 1, unchanged, keeps its epoch.
	res = h.ok(assignLake(tbl, lakeTask(0, 0, 2, 3), lakeTask(1, 2, 4, 2)))
	moved, kept := res.GetTable().GetLake().GetTasks()[0], res.GetTable().GetLake().GetTasks()[1]
	if moved.GetEpoch() != 3 || kept.GetEpoch() != t1.GetEpoch() {
		t.Fatalf("tasks after the move: %v", res.GetTable().GetLake().GetTasks())
	}
	wantRefused(t, h.apply(commitLake(tbl, t0, 2, "lake/sales/events/metadata/c.metadata.json")),
		pb.ErrorCode_ERROR_CODE_FENCED, "node 3's at epoch 3, not node 1's at epoch 1")
	h.ok(commitLake(tbl, moved, 2, "lake/sales/events/metadata/c.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 100}))

	// The same assignment again changes nothing.
	if res := h.ok(assignLake(tbl, lakeTask(0, 0, 2, 3), lakeTask(1, 2, 4, 2))); !res.GetUnchanged() {
		t.Fatal("an unchanged assignment changed the table")
	}
	// Task 1 keeps node 2 but its range changes: a new epoch, and node 2's
	// commit at the old one, built for the old range, is fenced.
	res = h.ok(assignLake(tbl, lakeTask(0, 0, 1, 3), lakeTask(1, 1, 4, 2)))
	if regrown := res.GetTable().GetLake().GetTasks()[1]; regrown.GetEpoch() != 5 {
		t.Fatalf("task 1 after its range changed: %v", regrown)
	}
	wantRefused(t, h.apply(commitLake(tbl, kept, 3, "lake/sales/events/metadata/d.metadata.json")),
		pb.ErrorCode_ERROR_CODE_FENCED, "node 2's at epoch 5, not node 2's at epoch 2")
	// No tasks: the lake stays, its tasks go, and a commit is fenced.
	res = h.ok(assignLake(tbl))
	if l := res.GetTable().GetLake(); l.GetVersion() != 3 || len(l.GetTasks()) != 0 || l.GetLastTaskEpoch() != 5 {
		t.Fatalf("lake without tasks: %v", l)
	}
	wantRefused(t, h.apply(commitLake(tbl, moved, 3, "lake/sales/events/metadata/d.metadata.json")), pb.ErrorCode_ERROR_CODE_FENCED, "no lake task 0")
}

// TestLakeRefusals: assignments and commits that break a rule change
// nothing and say which rule.
func TestLakeRefusals(t *testing.T) {
	h, tbl := lakeFixture(t)
	invalid := pb.ErrorCode_ERROR_CODE_INVALID_REQUEST
	for _, tt := range []struct {
		name  string
		tasks []*pb.LakeTask
		code  pb.ErrorCode
		want  string
	}{
		{"gap", []*pb.LakeTask{lakeTask(0, 0, 1, 1), lakeTask(1, 2, 4, 2)}, invalid, "covers buckets [2, 4)"},
		{"overlap", []*pb.LakeTask{lakeTask(0, 0, 3, 1), lakeTask(1, 2, 4, 2)}, invalid, "covers buckets [2, 4)"},
		{"short", []*pb.LakeTask{lakeTask(0, 0, 3, 1)}, invalid, "cover buckets [0, 3) of [0, 4)"},
		{"past the end", []*pb.LakeTask{lakeTask(0, 0, 5, 1)}, invalid, "covers buckets [0, 5)"},
		{"index twice", []*pb.LakeTask{lakeTask(0, 0, 2, 1), lakeTask(0, 2, 4, 2)}, invalid, "listed twice"},
		{"meta node", []*pb.LakeTask{lakeTask(0, 0, 4, 9)}, pb.ErrorCode_ERROR_CODE_UNKNOWN_NODE, "node 9 is not a registered tablet node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantRefused(t, h.apply(assignLake(tbl, tt.tasks...)), tt.code, tt.want)
		})
	}
	if h.table("events").GetLake() != nil {
		t.Fatal("a refused assignment stored a lake")
	}
	// Another table id (dropped and created again) is fenced.
	stale := &pb.TableRecord{Name: "events", Id: tbl.GetId() + 1000}
	wantRefused(t, h.apply(assignLake(stale, lakeTask(0, 0, 4, 1))), pb.ErrorCode_ERROR_CODE_FENCED, "dropped and created again")
	// A table without the lake takes no tasks.
	orders := h.table("orders")
	wantRefused(t, h.apply(&pb.Command{Op: &pb.Command_AssignLakeTasks{AssignLakeTasks: &pb.AssignLakeTasks{
		Database: "sales", Name: "orders", TableId: orders.GetId(), Tasks: []*pb.LakeTask{lakeTask(0, 0, 1, 1)},
		TableUuid: lakeUUID, Prefix: "lake/sales/orders"}}}), invalid, "not lake-enabled")

	res := h.ok(assignLake(tbl, lakeTask(0, 0, 2, 1), lakeTask(1, 2, 4, 2)))
	t0 := res.GetTable().GetLake().GetTasks()[0]
	// The uuid and prefix are fixed by the first assignment.
	other := assignLake(tbl, lakeTask(0, 0, 4, 1))
	other.GetAssignLakeTasks().Prefix = "elsewhere"
	wantRefused(t, h.apply(other), invalid, `not 2f6c8a51-58a9-4c1e-9d7e-3b1f0c9a7e42 under "elsewhere"`)
	h.ok(commitLake(tbl, t0, 0, "k1", &pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 1, Offset: 50}))
	for _, tt := range []struct {
		name   string
		offset *pb.LakeOffset
		want   string
	}{
		{"bucket of another task", &pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 2, Offset: 1}, "bucket 2 is not in lake task 0's [0, 2)"},
		{"backwards", &pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 1, Offset: 49}, "lake offset 49 below the committed 50"},
		{"another table's id", &pb.LakeOffset{PhysicalId: orders.GetId(), Bucket: 0, Offset: 1}, "has no partition"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantRefused(t, h.apply(commitLake(tbl, t0, 1, "k2", tt.offset)), invalid, tt.want)
		})
	}
	wantRefused(t, h.apply(commitLake(tbl, t0, 1, "")), invalid, "metadata key of 1 to")
	if l := h.table("events").GetLake(); l.GetVersion() != 1 || l.GetMetadataKey() != "k1" {
		t.Fatalf("refused commits changed the lake: %v", l)
	}
	if b := h.bucket(tbl.GetId(), 1); b.GetLakeOffset() != 50 {
		t.Fatalf("bucket 1 lake offset %d after refused commits", b.GetLakeOffset())
	}
}

// TestLakeCommitOfPartitions: a partitioned table's task commits the
// offsets of its buckets in every partition.
func TestLakeCommitOfPartitions(t *testing.T) {
	h := ddlFixture(t)
	h.ok(eventsTable(func(c *pb.CreateTable) {
		c.Buckets = 2
		c.PartitionKeys = []string{"region"}
		c.Properties = map[string]string{"datalake.enabled": "true"}
	}))
	tbl := h.table("events")
	var ids []uint64
	for _, v := range []string{"eu", "us"} {
		res := h.ok(&pb.Command{Op: &pb.Command_CreatePartition{CreatePartition: &pb.CreatePartition{
			Database: "sales", Table: "events", TableId: tbl.GetId(), Values: []string{v}}}})
		ids = append(ids, res.GetPartition().GetId())
	}
	res := h.ok(assignLake(tbl, lakeTask(0, 0, 2, 1)))
	task := res.GetTable().GetLake().GetTasks()[0]
	h.ok(commitLake(tbl, task, 0, "k1", &pb.LakeOffset{PhysicalId: ids[0], Bucket: 1, Offset: 9}, &pb.LakeOffset{PhysicalId: ids[1], Bucket: 0, Offset: 3}))
	if a, b := h.bucket(ids[0], 1).GetLakeOffset(), h.bucket(ids[1], 0).GetLakeOffset(); a != 9 || b != 3 {
		t.Fatalf("partition buckets' lake offsets %d, %d", a, b)
	}
	wantRefused(t, h.apply(commitLake(tbl, task, 1, "k2", &pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 1})),
		pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "has no partition")
}

// TestUncleanElectionFencesLake: an unclean election of a bucket the lake
// holds records of fences it (Lake 4): no lake commit moves it until its
// new leader's fence cut, which lowers its lake offset to the cut (where
// the log's new history parts from the old), and commits go on from
// there.
func TestUncleanElectionFencesLake(t *testing.T) {
	h, tbl := lakeFixture(t)
	res := h.ok(assignLake(tbl, lakeTask(0, 0, 4, 1)))
	task := res.GetTable().GetLake().GetTasks()[0]
	h.ok(commitLake(tbl, task, 0, "lake/sales/events/metadata/a.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 100}))

	b := h.bucket(tbl.GetId(), 0)
	old := b.GetLeader()
	b.Isr = []uint32{old}
	live := func(id uint32) bool { return id != old }
	if _, refusal := electBucket(b, live, nil, true, noLogs); refusal != nil || b.GetRemoteFenceEpoch() != b.GetLeaderEpoch() || b.GetLeader() == old {
		t.Fatalf("unclean election of a bucket with lake offset 100: %v, %v; want a new leader and the lake fenced", refusal, b)
	}
	setBucket(t, h.s, b)
	wantRefused(t, h.apply(commitLake(tbl, task, 1, "lake/sales/events/metadata/b.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 120})), pb.ErrorCode_ERROR_CODE_FENCED, "awaits its cut")

	cut := commitRemote(b, b.GetLeader(), 0, 0, 60)
	cut.GetCommitRemoteLog().FenceCut, cut.GetCommitRemoteLog().CutOffset = true, 60
	if got := h.ok(cut).GetBucket(); got.GetRemoteFenceEpoch() != 0 || got.GetLakeOffset() != 60 {
		t.Fatalf("after the cut at 60: fence %d, lake offset %d; want the fence lifted and the lake at 60",
			got.GetRemoteFenceEpoch(), got.GetLakeOffset())
	}
	h.ok(commitLake(tbl, task, 1, "lake/sales/events/metadata/b.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 60}))
	h.ok(commitLake(tbl, task, 2, "lake/sales/events/metadata/c.metadata.json",
		&pb.LakeOffset{PhysicalId: tbl.GetId(), Bucket: 0, Offset: 75}))
	if got := h.bucket(tbl.GetId(), 0).GetLakeOffset(); got != 75 {
		t.Fatalf("lake offset %d after the cut and a commit, want 75", got)
	}
}
