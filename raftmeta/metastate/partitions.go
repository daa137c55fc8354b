package metastate

import (
	"bytes"
	"errors"
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/partition"
	"github.com/floedb/floe/internal/tableprop"
	"github.com/floedb/floe/transport/pb"
)

// MaxPartitions bounds the partitions of one table: a day-partitioned
// table kept for ten years is 3,650; each partition is the table's bucket
// count of buckets.
const MaxPartitions = 10_000

const codeUnknownPartition = pb.ErrorCode_ERROR_CODE_UNKNOWN_PARTITION

// partitionKey is the table id, big-endian, then the partition's name:
// a table's partitions sort by name, together.
func partitionKey(tableID uint64, name string) []byte { return append(u64(tableID), name...) }

// SpecOf is the partitioning of a table record, resolved against its
// current schema; the zero Spec for a table that is not partitioned.
func SpecOf(t *pb.TableRecord) (partition.Spec, error) {
	if len(t.GetPartitionKeys()) == 0 {
		return partition.Spec{}, nil
	}
	schemas := t.GetSchemas()
	if len(schemas) == 0 {
		return partition.Spec{}, errorf(codeInvalidRequest, "table %q has no schema", t.GetDatabase()+"."+t.GetName())
	}
	return specOf(schemas[len(schemas)-1].GetColumns(), t.GetPrimaryKey(), t.GetPartitionKeys())
}

func specOf(cols []*pb.Column, pk, keys []string) (partition.Spec, error) {
	columns := make([]partition.Column, len(cols))
	for i, c := range cols {
		columns[i] = partition.Column{Name: c.GetName(), Type: c.GetType(), Nullable: c.GetNullable()}
	}
	return partition.NewSpec(columns, pk, keys)
}

// validatePartitioning checks a new table's partition columns and
// auto-partitioning, and returns its bucket key: of a partitioned
// primary-key table that does not name one, the primary key without the
// partition columns (every row of a partition has the same values there),
// unless that leaves nothing. It reads the properties with the table's
// replication, so it runs after placeTable has decided it: read with
// another, min.insync.replicas may not parse.
func validatePartitioning(table string, c *pb.CreateTable, bucketKey []string, replication int32) ([]string, error) {
	keys := c.GetPartitionKeys()
	if len(keys) == 0 {
		return bucketKey, nil
	}
	if c.GetChecks() < tableprop.ChecksPartitions {
		return nil, errorf(codeInvalidRequest, "table %q: partition columns need create-table checks %d (this command has %d)",
			table, tableprop.ChecksPartitions, c.GetChecks())
	}
	spec, err := specOf(c.GetColumns(), c.GetPrimaryKey(), keys)
	if err != nil {
		return nil, errorf(codeInvalidRequest, "table %q: %v", table, err)
	}
	props, err := tableprop.Parse(c.GetProperties(), tableprop.Table{Replication: int(replication), PrimaryKey: len(c.GetPrimaryKey()) > 0,
		Partitioned: true, Checks: min(c.GetChecks(), tableprop.LatestChecks)})
	if err != nil {
		return nil, errorf(codeInvalidRequest, "table %q: %v", table, err)
	}
	if err := checkAutoPartition(table, spec, props); err != nil {
		return nil, err
	}
	if len(c.GetBucketKey()) == 0 && len(c.GetPrimaryKey()) > 0 {
		rest := slices.DeleteFunc(slices.Clone(c.GetPrimaryKey()), func(k string) bool { return slices.Contains(keys, k) })
		if len(rest) > 0 {
			return rest, nil
		}
	}
	return bucketKey, nil
}

// checkAutoPartition checks that an auto-partitioned table's partition
// column can hold the time unit's values.
func checkAutoPartition(table string, spec partition.Spec, props tableprop.Values) error {
	if props.AutoPartition == "" {
		return nil
	}
	if len(spec.Keys) != 1 {
		return errorf(codeInvalidRequest, "table %q: %s needs exactly one partition column, the table has %d",
			table, tableprop.AutoPartitionTimeUnit, len(spec.Keys))
	}
	switch k := spec.Keys[0]; {
	case k.Kind == partition.Int:
		return errorf(codeInvalidRequest, "table %q: %s: partition column %q is an integer; auto-partitioning writes time values into a STRING column (or a DATE one with %s=day)",
			table, tableprop.AutoPartitionTimeUnit, k.Name, tableprop.AutoPartitionTimeUnit)
	case k.Kind == partition.Date && props.AutoPartition != tableprop.UnitDay:
		return errorf(codeInvalidRequest, "table %q: %s=%s: partition column %q is a DATE, which holds days only (use %s=day, or a STRING column)",
			table, tableprop.AutoPartitionTimeUnit, props.AutoPartition, k.Name, tableprop.AutoPartitionTimeUnit)
	}
	return nil
}

// TableProperties reads a stored table's properties.
func TableProperties(t *pb.TableRecord) (tableprop.Values, error) {
	return tableprop.ParseStored(t.GetProperties(), tableprop.Table{Replication: int(t.GetReplication()),
		PrimaryKey: len(t.GetPrimaryKey()) > 0, Partitioned: len(t.GetPartitionKeys()) > 0, CreatedChecks: t.GetChecks()})
}

// partitionedTable finds the partitioned table a partition command names
// and checks its fence.
func (a *applier) partitionedTable(database, name string, tableID uint64) (*pb.TableRecord, partition.Spec, error) {
	db, err := getDatabase(a.tx, database)
	if err != nil {
		return nil, partition.Spec{}, err
	}
	if db == nil {
		return nil, partition.Spec{}, errorf(codeUnknownDatabase, "database %.256q does not exist", database)
	}
	t, err := getTable(a.tx, db.GetId(), name)
	if err != nil {
		return nil, partition.Spec{}, err
	}
	qualified := db.GetName() + "." + name
	switch {
	case t == nil:
		return nil, partition.Spec{}, errorf(codeUnknownTable, "table %.256q does not exist", qualified)
	case tableID != 0 && t.GetId() != tableID:
		return nil, partition.Spec{}, errorf(codeFenced, "table %q has id %d, not %d: it was dropped and created again since the caller read it",
			qualified, t.GetId(), tableID)
	case len(t.GetPartitionKeys()) == 0:
		return nil, partition.Spec{}, errorf(codeInvalidRequest, "table %q is not partitioned", qualified)
	}
	spec, err := SpecOf(t)
	if err != nil {
		return nil, partition.Spec{}, errorf(codeInvalidRequest, "table %q: %v", qualified, err)
	}
	return t, spec, nil
}

// createPartition adds a partition and places its buckets like a new
// table's.
func (a *applier) createPartition(c *pb.CreatePartition) (*pb.CommandResult, error) {
	t, values, name, existing, err := a.commandPartition(c.GetDatabase(), c.GetTable(), c.GetTableId(), c.GetValues(), c.GetPartition())
	if err != nil {
		return nil, err
	}
	qualified := t.GetDatabase() + "." + t.GetName()
	if p := existing; p != nil {
		if c.GetIfNotExists() {
			return &pb.CommandResult{Value: &pb.CommandResult_Partition{Partition: p}, Unchanged: true}, nil
		}
		return nil, errorf(codeAlreadyExists, "partition %s of table %q already exists", name, qualified)
	}
	if c.GetOrigin() == pb.PartitionOrigin_PARTITION_ORIGIN_ON_WRITE {
		props, err := TableProperties(t)
		if err != nil {
			return nil, errorf(codeInvalidRequest, "table %q: %v", qualified, err)
		}
		if !props.DynamicCreate {
			return nil, errorf(codeUnknownPartition, "partition %s of table %q does not exist, and the table does not create partitions on write (%s=false)",
				name, qualified, tableprop.PartitionDynamicCreate)
		}
	}
	if n, err := countPartitions(a.tx, t.GetId()); err != nil {
		return nil, err
	} else if n >= MaxPartitions {
		return nil, errorf(codeInvalidRequest, "table %q has %d partitions, the most a table may have (MaxPartitions): drop old ones first",
			qualified, n)
	}
	placement, err := a.placePartition(qualified, t, c.GetLiveNodes())
	if err != nil {
		return nil, err
	}
	id, err := nextID(a.tx, keyLastTableID)
	if err != nil {
		return nil, err
	}
	p := &pb.PartitionRecord{Id: id, TableId: t.GetId(), Values: values, Name: name, CreatedAtMs: a.appendedAtMs, Origin: c.GetOrigin()}
	if err := a.putPartition(p); err != nil {
		return nil, err
	}
	if err := a.putNewBuckets(id, placement); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Partition{Partition: p}}, nil
}

// commandPartition finds what a partition command names: the table, the
// partition's canonical values and name, and the partition if it exists.
func (a *applier) commandPartition(database, table string, tableID uint64, values []string, name string) (
	t *pb.TableRecord, canonical []string, canonicalName string, p *pb.PartitionRecord, err error) {
	t, spec, err := a.partitionedTable(database, table, tableID)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if canonical, err = partitionValues(spec, values, name); err != nil {
		return nil, nil, "", nil, errorf(codeInvalidRequest, "table %q: %v", t.GetDatabase()+"."+t.GetName(), err)
	}
	canonicalName = spec.Name(canonical)
	p, err = getPartition(a.tx, t.GetId(), canonicalName)
	return t, canonical, canonicalName, p, err
}

// partitionValues are the canonical values of a partition command: its
// values, or else the name it gives.
func partitionValues(spec partition.Spec, values []string, name string) ([]string, error) {
	if len(values) == 0 && name != "" {
		return spec.Parse(name)
	}
	return spec.Check(values)
}

// placePartition places a new partition's buckets: the table's count and
// replication over the tablet nodes (live ones only, when the command
// names them).
func (a *applier) placePartition(qualified string, t *pb.TableRecord, live []uint32) ([][]uint32, error) {
	nodes, err := tabletNodes(a.tx)
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, (*pb.NodeRecord).GetDecommissioning)
	if len(live) > 0 {
		nodes = slices.DeleteFunc(nodes, func(n *pb.NodeRecord) bool { return !slices.Contains(live, n.GetId()) })
	}
	if len(nodes) < int(t.GetReplication()) {
		return nil, errorf(codeNotEnoughReplicas, "table %q has replication %d; %s available for a new partition",
			qualified, t.GetReplication(), plural(len(nodes), "tablet node"))
	}
	return a.place(nodes, int(t.GetBuckets()), int(t.GetReplication()))
}

// dropPartition drops a partition and its buckets.
func (a *applier) dropPartition(c *pb.DropPartition) (*pb.CommandResult, error) {
	t, _, name, p, err := a.commandPartition(c.GetDatabase(), c.GetTable(), c.GetTableId(), c.GetValues(), c.GetPartition())
	if err != nil {
		if e := (*Error)(nil); c.GetIfExists() && errors.As(err, &e) && (e.Code == codeUnknownTable || e.Code == codeUnknownDatabase) {
			return &pb.CommandResult{Unchanged: true}, nil
		}
		return nil, err
	}
	qualified := t.GetDatabase() + "." + t.GetName()
	switch {
	case p == nil && c.GetIfExists():
		return &pb.CommandResult{Unchanged: true}, nil
	case p == nil:
		return nil, errorf(codeUnknownPartition, "partition %s of table %q does not exist", name, qualified)
	case c.GetPartitionId() != 0 && p.GetId() != c.GetPartitionId():
		if c.GetIfExists() {
			return &pb.CommandResult{Unchanged: true}, nil
		}
		return nil, errorf(codeFenced, "partition %s of table %q has id %d, not %d: it was dropped and created again since",
			name, qualified, p.GetId(), c.GetPartitionId())
	}
	if err := a.dropPartitionRecord(p); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Partition{Partition: p}}, nil
}

// putPartition stores a partition record and lists it as changed.
func (a *applier) putPartition(p *pb.PartitionRecord) error {
	if err := putRecord(a.tx.Bucket(bucketPartitions), partitionKey(p.GetTableId(), p.GetName()), p); err != nil {
		return err
	}
	a.changes.partitions = append(a.changes.partitions, p)
	return nil
}

// dropPartitionRecord deletes a partition and its buckets and lists it as
// dropped.
func (a *applier) dropPartitionRecord(p *pb.PartitionRecord) error {
	deleted, err := deleteBuckets(a.tx, p.GetId())
	if err != nil {
		return err
	}
	for _, b := range deleted {
		a.edits = append(a.edits, bucketEdit{old: b})
	}
	if err := a.tx.Bucket(bucketPartitions).Delete(partitionKey(p.GetTableId(), p.GetName())); err != nil {
		return err
	}
	a.changes.droppedPartitions = append(a.changes.droppedPartitions, p.GetId())
	return nil
}

// dropPartitionsOf drops every partition of a table being dropped.
func (a *applier) dropPartitionsOf(tableID uint64) error {
	parts, err := listPartitions(a.tx, tableID)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := a.dropPartitionRecord(p); err != nil {
			return err
		}
	}
	return nil
}

// getPartition returns a table's partition by name, or nil.
func getPartition(tx *bolt.Tx, tableID uint64, name string) (*pb.PartitionRecord, error) {
	p := &pb.PartitionRecord{}
	ok, err := getRecord(tx.Bucket(bucketPartitions), partitionKey(tableID, name), p)
	if !ok || err != nil {
		return nil, err
	}
	return p, nil
}

// listPartitions returns a table's partitions, sorted by name.
func listPartitions(tx *bolt.Tx, tableID uint64) ([]*pb.PartitionRecord, error) {
	var out []*pb.PartitionRecord
	prefix := u64(tableID)
	c := tx.Bucket(bucketPartitions).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		p := &pb.PartitionRecord{}
		if err := proto.Unmarshal(v, p); err != nil {
			return nil, corruptRecord(k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// countPartitions counts a table's partitions without decoding them.
func countPartitions(tx *bolt.Tx, tableID uint64) (int, error) {
	n := 0
	prefix := u64(tableID)
	c := tx.Bucket(bucketPartitions).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n, nil
}

// Partitions returns a table's partitions, sorted by name.
func (v *View) Partitions(tableID uint64) ([]*pb.PartitionRecord, error) {
	return listPartitions(v.tx, tableID)
}

// Partition returns a table's partition by name, or nil.
func (v *View) Partition(tableID uint64, name string) (*pb.PartitionRecord, error) {
	return getPartition(v.tx, tableID, name)
}

// Buckets returns the buckets of a table or partition (by the id its
// buckets are keyed by), sorted by number.
func (v *View) Buckets(physicalID uint64) ([]*pb.BucketRecord, error) {
	return listBuckets(v.tx, physicalID)
}

// PartitionNamed returns the partition of table t that name names
// ("dt=2026-12-03", read against the table's partition columns):
// INVALID_REQUEST when t is not partitioned or name is not a partition's
// name, UNKNOWN_PARTITION when no such partition exists.
func (v *View) PartitionNamed(t *pb.TableRecord, name string) (*pb.PartitionRecord, error) {
	qualified := t.GetDatabase() + "." + t.GetName()
	if len(t.GetPartitionKeys()) == 0 {
		return nil, errorf(codeInvalidRequest, "table %q is not partitioned: no partition %.128q", qualified, name)
	}
	spec, err := SpecOf(t)
	if err != nil {
		return nil, errorf(codeInvalidRequest, "table %q: %v", qualified, err)
	}
	values, err := spec.Parse(name)
	if err != nil {
		return nil, errorf(codeInvalidRequest, "table %q: %v", qualified, err)
	}
	p, err := getPartition(v.tx, t.GetId(), spec.Name(values))
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errorf(codeUnknownPartition, "partition %s of table %q does not exist", spec.Name(values), qualified)
	}
	return p, nil
}

// PhysicalTable returns a table and the buckets that an operation naming
// a bucket by database, table and partition means: the table's own, or,
// of a partitioned table, those of its partition (which it then returns
// too; partition must be set). INVALID_REQUEST for a partition of a table
// that is not partitioned, or none of one that is.
func (v *View) PhysicalTable(database, name, partition string) (*pb.TableRecord, *pb.PartitionRecord, []*pb.BucketRecord, error) {
	t, buckets, err := v.Table(database, name)
	if err != nil {
		return nil, nil, nil, err
	}
	if partition == "" && len(t.GetPartitionKeys()) == 0 {
		return t, nil, buckets, nil
	}
	if partition == "" {
		return nil, nil, nil, errorf(codeInvalidRequest, "table %q is partitioned: its buckets are its partitions', name one (dt=2026-12-03)",
			database+"."+name)
	}
	p, err := v.PartitionNamed(t, partition)
	if err != nil {
		return nil, nil, nil, err
	}
	if buckets, err = listBuckets(v.tx, p.GetId()); err != nil {
		return nil, nil, nil, err
	}
	return t, p, buckets, nil
}
