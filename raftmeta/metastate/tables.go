package metastate

import (
	"bytes"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// createTable validates a table, stores it with schema version 1, and places
// its buckets over the tablet nodes.
func (a *applier) createTable(c *pb.CreateTable) (*pb.CommandResult, error) {
	db, existing, err := a.tableToCreate(c)
	if err != nil || existing != nil {
		return existing, err
	}
	qualified := db.GetName() + "." + c.GetName()
	bucketCols, err := validateSchema(qualified, c)
	if err != nil {
		return nil, err
	}
	buckets, replication, placement, err := a.placeTable(qualified, c)
	if err != nil {
		return nil, err
	}
	if bucketCols, err = validatePartitioning(qualified, c, bucketCols, replication); err != nil {
		return nil, err
	}
	id, err := nextID(a.tx, keyLastTableID)
	if err != nil {
		return nil, err
	}
	columns := make([]*pb.Column, len(c.GetColumns()))
	for i, col := range c.GetColumns() {
		columns[i] = proto.Clone(col).(*pb.Column)
	}
	rec := &pb.TableRecord{
		Id:          id,
		DatabaseId:  db.GetId(),
		Database:    db.GetName(),
		Name:        c.GetName(),
		Schemas:     []*pb.SchemaVersion{{Id: 1, Columns: columns}},
		PrimaryKey:  slices.Clone(c.GetPrimaryKey()),
		BucketKey:   bucketCols,
		Buckets:     buckets,
		Replication: replication,
		Properties:  maps.Clone(c.GetProperties()),
		CreatedAtMs: a.appendedAtMs,
		// The defaults of the properties it did not set depend on it
		// (tableprop.ParseStored): log.ttl is 7d only from version 2 on.
		Checks:        c.GetChecks(),
		PartitionKeys: slices.Clone(c.GetPartitionKeys()),
	}
	if err := a.putTable(rec); err != nil {
		return nil, err
	}
	// A partitioned table's buckets are its partitions'; placing them now
	// checked that the cluster can hold one.
	if len(rec.PartitionKeys) == 0 {
		if err := a.putNewBuckets(id, placement); err != nil {
			return nil, err
		}
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: rec}}, nil
}

// tableToCreate finds the database of a table to create and checks its
// name. existing is the answer when the table exists and the command
// allows it (if not exists); an existing table is refused otherwise.
func (a *applier) tableToCreate(c *pb.CreateTable) (db *pb.DatabaseRecord, existing *pb.CommandResult, err error) {
	db, err = getDatabase(a.tx, c.GetDatabase())
	if err != nil {
		return nil, nil, err
	}
	if db == nil {
		return nil, nil, errorf(codeUnknownDatabase, "database %.256q does not exist", c.GetDatabase())
	}
	name := c.GetName()
	if !validName(name) {
		return nil, nil, errorf(codeInvalidRequest, "invalid table name %.256q: %s", name, nameRule)
	}
	t, err := getTable(a.tx, db.GetId(), name)
	if err != nil || t == nil {
		return db, nil, err
	}
	if c.GetIfNotExists() {
		return db, &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}, Unchanged: true}, nil
	}
	return nil, nil, errorf(codeAlreadyExists, "table %q already exists", db.GetName()+"."+name)
}

// placeTable decides a new table's bucket count and replication from the
// command and the tablet nodes (live ones only, when the command names
// them), checks its properties against them, and places its buckets.
func (a *applier) placeTable(qualified string, c *pb.CreateTable) (buckets, replication int32, placement [][]uint32, err error) {
	nodes, err := tabletNodes(a.tx)
	if err != nil {
		return 0, 0, nil, err
	}
	// A node being decommissioned takes no new replica.
	nodes = slices.DeleteFunc(nodes, (*pb.NodeRecord).GetDecommissioning)
	count := tabletCount{registered: len(nodes), live: -1}
	if live := c.GetLiveNodes(); len(live) > 0 {
		nodes = slices.DeleteFunc(nodes, func(n *pb.NodeRecord) bool { return !slices.Contains(live, n.GetId()) })
		count.live = len(nodes)
	}
	if buckets, replication, err = bucketsAndReplication(qualified, c, count); err != nil {
		return 0, 0, nil, err
	}
	if err := validateProperties(qualified, c, replication); err != nil {
		return 0, 0, nil, err
	}
	placement, err = a.place(nodes, int(buckets), int(replication))
	return buckets, replication, placement, err
}

// putNewBuckets stores the buckets of a new table, each led by its
// preferred replica unless that one is being drained, with every replica
// in the ISR.
func (a *applier) putNewBuckets(table uint64, placement [][]uint32) error {
	// A new table's buckets go after every stored one (table ids only
	// grow): filled to bbolt's default half, the pages of appended keys stay
	// half empty for good, and the file and every snapshot twice the size.
	a.tx.Bucket(bucketBuckets).FillPercent = appendFillPercent
	draining, err := a.drainingNodes()
	if err != nil {
		return err
	}
	for b, replicas := range placement {
		br := &pb.BucketRecord{
			TableId:  table,
			Bucket:   int32(b),
			Replicas: replicas,
			Leader:   preferred(replicas, func(uint32) bool { return true }, draining),
			Isr:      slices.Clone(replicas),
		}
		if err := a.putBucket(br); err != nil {
			return err
		}
	}
	return nil
}

// place runs Place with the tablet nodes and the load of every existing
// bucket.
func (a *applier) place(nodes []*pb.NodeRecord, buckets, replication int) ([][]uint32, error) {
	x, err := a.bucketIndex()
	if err != nil {
		return nil, err
	}
	pnodes := make([]PlacementNode, len(nodes))
	for i, n := range nodes {
		pnodes[i] = PlacementNode{ID: n.GetId(), Rack: n.GetRack()}
	}
	return Place(pnodes, x.load, buckets, replication)
}

// dropTable removes a table and its buckets.
func (a *applier) dropTable(c *pb.DropTable) (*pb.CommandResult, error) {
	db, err := getDatabase(a.tx, c.GetDatabase())
	if err != nil {
		return nil, err
	}
	if db == nil {
		if c.GetIfExists() {
			return &pb.CommandResult{Unchanged: true}, nil
		}
		return nil, errorf(codeUnknownDatabase, "database %.256q does not exist", c.GetDatabase())
	}
	t, err := getTable(a.tx, db.GetId(), c.GetName())
	if err != nil {
		return nil, err
	}
	if t == nil {
		if c.GetIfExists() {
			return &pb.CommandResult{Unchanged: true}, nil
		}
		return nil, errorf(codeUnknownTable, "table %.256q does not exist", db.GetName()+"."+c.GetName())
	}
	if err := a.dropTableRecord(t); err != nil {
		return nil, err
	}
	return &pb.CommandResult{Value: &pb.CommandResult_Table{Table: t}}, nil
}

// deleteTable removes a table record and its buckets, and returns the
// buckets it removed.
func deleteTable(tx *bolt.Tx, t *pb.TableRecord) ([]*pb.BucketRecord, error) {
	deleted, err := deleteBuckets(tx, t.GetId())
	if err != nil {
		return nil, err
	}
	return deleted, tx.Bucket(bucketTables).Delete(tableKey(t.GetDatabaseId(), t.GetName()))
}

// deleteBuckets removes the buckets of a table or partition and returns
// them.
func deleteBuckets(tx *bolt.Tx, physicalID uint64) ([]*pb.BucketRecord, error) {
	deleted, err := listBuckets(tx, physicalID)
	if err != nil {
		return nil, err
	}
	buckets := tx.Bucket(bucketBuckets)
	for _, b := range deleted {
		if err := buckets.Delete(bucketKey(physicalID, b.GetBucket())); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}

// getTable returns a table by database id and name, or nil.
func getTable(tx *bolt.Tx, databaseID uint64, name string) (*pb.TableRecord, error) {
	if !validName(name) {
		return nil, nil
	}
	t := &pb.TableRecord{}
	ok, err := getRecord(tx.Bucket(bucketTables), tableKey(databaseID, name), t)
	if !ok || err != nil {
		return nil, err
	}
	return t, nil
}

// listTables returns a database's tables, sorted by name.
func listTables(tx *bolt.Tx, databaseID uint64) ([]*pb.TableRecord, error) {
	var out []*pb.TableRecord
	prefix := tablePrefix(databaseID)
	c := tx.Bucket(bucketTables).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		t := &pb.TableRecord{}
		if err := proto.Unmarshal(v, t); err != nil {
			return nil, corruptRecord(k, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// listBuckets returns a table's buckets, sorted by number.
func listBuckets(tx *bolt.Tx, tableID uint64) ([]*pb.BucketRecord, error) {
	var out []*pb.BucketRecord
	prefix := bucketPrefix(tableID)
	c := tx.Bucket(bucketBuckets).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		b := &pb.BucketRecord{}
		if err := proto.Unmarshal(v, b); err != nil {
			return nil, corruptRecord(k, err)
		}
		out = append(out, b)
	}
	return out, nil
}
