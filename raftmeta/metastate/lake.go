package metastate

import (
	"cmp"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// Bounds of a lake's commands.
const (
	// maxLakeTasks bounds a table's tiering tasks: one per bucket at most.
	maxLakeTasks = 1024
	// maxLakeKeyBytes bounds the lake prefix and metadata key (S3's key
	// limit); maxLakeUUIDBytes the table uuid.
	maxLakeKeyBytes  = 1024
	maxLakeUUIDBytes = 64
	// maxLakeOffsets bounds the offsets one commit moves: a task's
	// buckets in every partition (MaxBuckets × partitions) would be far
	// more, so a task commits them in several versions.
	maxLakeOffsets = 100_000
)

// lakeTable finds the table a lake command names and checks its fence.
func (a *applier) lakeTable(database, name string, tableID uint64) (*pb.TableRecord, string, error) {
	db, err := getDatabase(a.tx, database)
	if err != nil {
		return nil, "", err
	}
	if db == nil {
		return nil, "", errorf(codeUnknownDatabase, "database %.256q does not exist", database)
	}
	t, err := getTable(a.tx, db.GetId(), name)
	if err != nil {
		return nil, "", err
	}
	qualified := db.GetName() + "." + name
	switch {
	case t == nil:
		return nil, "", errorf(codeUnknownTable, "table %.256q does not exist", qualified)
	case tableID != t.GetId():
		return nil, "", errorf(codeFenced, "table %q has id %d, not %d: it was dropped and created again", qualified, t.GetId(), tableID)
	}
	return t, qualified, nil
}

// assignLakeTasks sets a lake-enabled table's tiering tasks (see
// pb.AssignLakeTasks).
func (a *applier) assignLakeTasks(c *pb.AssignLakeTasks) (*pb.CommandResult, error) {
	t, qualified, err := a.lakeTable(c.GetDatabase(), c.GetName(), c.GetTableId())
	if err != nil {
		return nil, err
	}
	props, err := TableProperties(t)
	if err != nil {
		return nil, errorf(codeInvalidRequest, "table %q: %v", qualified, err)
	}
	tasks := c.GetTasks()
	if len(tasks) > 0 && !props.DataLake {
		return nil, errorf(codeInvalidRequest, "table %q is not lake-enabled (%s=true)", qualified, tableprop.DataLakeEnabled)
	}
	cur := t.GetLake()
	switch {
	case c.GetTableUuid() == "" || len(c.GetTableUuid()) > maxLakeUUIDBytes || c.GetPrefix() == "" || len(c.GetPrefix()) > maxLakeKeyBytes:
		return nil, errorf(codeInvalidRequest, "table %q: a lake needs a uuid of 1 to %d bytes and a prefix of 1 to %d", qualified, maxLakeUUIDBytes, maxLakeKeyBytes)
	case cur != nil && (cur.GetTableUuid() != c.GetTableUuid() || cur.GetPrefix() != c.GetPrefix()):
		return nil, errorf(codeInvalidRequest, "table %q: its lake is %s under %q, not %s under %q",
			qualified, cur.GetTableUuid(), cur.GetPrefix(), c.GetTableUuid(), c.GetPrefix())
	}
	if err := checkLakeTasks(a, qualified, t.GetBuckets(), tasks); err != nil {
		return nil, err
	}
	next := &pb.LakeState{TableUuid: c.GetTableUuid(), Prefix: c.GetPrefix()}
	if cur != nil {
		next = proto.CloneOf(cur)
	}
	old := map[uint32]*pb.LakeTask{}
	for _, task := range next.GetTasks() {
		old[task.GetIndex()] = task
	}
	next.Tasks = nil
	for _, in := range tasks {
		task := &pb.LakeTask{Index: in.GetIndex(), FirstBucket: in.GetFirstBucket(), EndBucket: in.GetEndBucket(), NodeId: in.GetNodeId()}
		if o := old[task.GetIndex()]; o != nil && o.GetNodeId() == task.GetNodeId() && o.GetFirstBucket() == task.GetFirstBucket() && o.GetEndBucket() == task.GetEndBucket() {
			task.Epoch = o.GetEpoch()
		} else {
			next.LastTaskEpoch++
			task.Epoch = next.GetLastTaskEpoch()
		}
		next.Tasks = append(next.Tasks, task)
	}
	slices.SortFunc(next.Tasks, func(x, y *pb.LakeTask) int { return cmp.Compare(x.GetIndex(), y.GetIndex()) })
	if proto.Equal(next, cur) {
		return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}, Unchanged: true}, nil
	}
	t = proto.CloneOf(t)
	t.Lake = next
	if err := a.putTable(t); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}}, nil
}

// checkLakeTasks checks that tasks have distinct indexes and disjoint
// ranges covering [0, buckets), and that their nodes are registered
// tablet nodes.
func checkLakeTasks(a *applier, table string, buckets int32, tasks []*pb.LakeTask) error {
	if len(tasks) == 0 {
		return nil
	}
	if len(tasks) > maxLakeTasks {
		return errorf(codeInvalidRequest, "table %q: %d lake tasks; at most %d", table, len(tasks), maxLakeTasks)
	}
	nodes, err := tabletNodes(a.tx)
	if err != nil {
		return err
	}
	byRange := slices.Clone(tasks)
	slices.SortFunc(byRange, func(x, y *pb.LakeTask) int { return cmp.Compare(x.GetFirstBucket(), y.GetFirstBucket()) })
	next := int32(0)
	seen := map[uint32]bool{}
	for _, task := range byRange {
		switch {
		case seen[task.GetIndex()]:
			return errorf(codeInvalidRequest, "table %q: lake task %d listed twice", table, task.GetIndex())
		case task.GetFirstBucket() != next || task.GetEndBucket() <= task.GetFirstBucket() || task.GetEndBucket() > buckets:
			return errorf(codeInvalidRequest, "table %q: lake task %d covers buckets [%d, %d); the tasks must cover [0, %d) in disjoint ranges",
				table, task.GetIndex(), task.GetFirstBucket(), task.GetEndBucket(), buckets)
		case !slices.ContainsFunc(nodes, func(n *pb.NodeRecord) bool { return n.GetId() == task.GetNodeId() }):
			return errorf(codeUnknownNode, "table %q: lake task %d: node %d is not a registered tablet node", table, task.GetIndex(), task.GetNodeId())
		}
		seen[task.GetIndex()] = true
		next = task.GetEndBucket()
	}
	if next != buckets {
		return errorf(codeInvalidRequest, "table %q: the lake tasks cover buckets [0, %d) of [0, %d)", table, next, buckets)
	}
	return nil
}

// commitLake commits a tiering task's new lake version (see
// pb.CommitLake).
func (a *applier) commitLake(c *pb.CommitLake) (*pb.CommandResult, error) {
	t, qualified, err := a.lakeTable(c.GetDatabase(), c.GetName(), c.GetTableId())
	if err != nil {
		return nil, err
	}
	lake := t.GetLake()
	i := slices.IndexFunc(lake.GetTasks(), func(task *pb.LakeTask) bool { return task.GetIndex() == c.GetTask() })
	if i < 0 {
		return nil, errorf(codeFenced, "table %q has no lake task %d", qualified, c.GetTask())
	}
	task := lake.GetTasks()[i]
	switch {
	case task.GetNodeId() != c.GetNodeId() || task.GetEpoch() != c.GetTaskEpoch():
		return nil, errorf(codeFenced, "table %q: lake task %d is node %d's at epoch %d, not node %d's at epoch %d",
			qualified, task.GetIndex(), task.GetNodeId(), task.GetEpoch(), c.GetNodeId(), c.GetTaskEpoch())
	case c.GetExpectedVersion() != lake.GetVersion():
		return nil, errorf(codeFenced, "table %q: lake version %d expected, committed is %d: read it again and commit on top of it",
			qualified, c.GetExpectedVersion(), lake.GetVersion())
	case c.GetMetadataKey() == "" || len(c.GetMetadataKey()) > maxLakeKeyBytes:
		return nil, errorf(codeInvalidRequest, "table %q: a lake commit needs a metadata key of 1 to %d bytes", qualified, maxLakeKeyBytes)
	case len(c.GetOffsets()) > maxLakeOffsets:
		return nil, errorf(codeInvalidRequest, "table %q: a lake commit moves %d buckets; at most %d", qualified, len(c.GetOffsets()), maxLakeOffsets)
	}
	physical, err := a.physicalIDs(t)
	if err != nil {
		return nil, err
	}
	var moved []*pb.BucketRecord
	for _, o := range c.GetOffsets() {
		switch {
		case !physical[o.GetPhysicalId()]:
			return nil, errorf(codeInvalidRequest, "table %q has no partition %d", qualified, o.GetPhysicalId())
		case o.GetBucket() < task.GetFirstBucket() || o.GetBucket() >= task.GetEndBucket():
			return nil, errorf(codeInvalidRequest, "table %q: bucket %d is not in lake task %d's [%d, %d)",
				qualified, o.GetBucket(), task.GetIndex(), task.GetFirstBucket(), task.GetEndBucket())
		}
		b, err := a.bucketRecord(o.GetPhysicalId(), o.GetBucket())
		if err != nil {
			return nil, err
		}
		if fence := b.GetRemoteFenceEpoch(); fence != 0 {
			return nil, errorf(codeFenced, "table %q: bucket %d of %d awaits its cut after the unclean election of leader epoch %d",
				qualified, o.GetBucket(), o.GetPhysicalId(), fence)
		}
		if o.GetOffset() < b.GetLakeOffset() {
			return nil, errorf(codeInvalidRequest, "table %q: bucket %d of %d: lake offset %d below the committed %d",
				qualified, o.GetBucket(), o.GetPhysicalId(), o.GetOffset(), b.GetLakeOffset())
		}
		if o.GetOffset() != b.GetLakeOffset() {
			b = proto.CloneOf(b)
			b.LakeOffset = o.GetOffset()
			moved = append(moved, b)
		}
	}
	for _, b := range moved {
		if err := a.putBucket(b); err != nil {
			return nil, err
		}
	}
	t = proto.CloneOf(t)
	t.Lake.Version++
	t.Lake.MetadataKey = c.GetMetadataKey()
	t.Lake.CommittedAtMs = a.appendedAtMs
	if err := a.putTable(t); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}}, nil
}

// physicalIDs are the ids a table's buckets are keyed by: its own, or its
// partitions'.
func (a *applier) physicalIDs(t *pb.TableRecord) (map[uint64]bool, error) {
	if len(t.GetPartitionKeys()) == 0 {
		return map[uint64]bool{t.GetId(): true}, nil
	}
	parts, err := listPartitions(a.tx, t.GetId())
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]bool, len(parts))
	for _, p := range parts {
		out[p.GetId()] = true
	}
	return out, nil
}
