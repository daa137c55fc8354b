package metastate

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// changeSet collects the nodes, tables and buckets one command writes or
// drops, for the metadata feed. A record written twice by one command is
// listed once, as last written.
type changeSet struct {
	nodes             []*pb.NodeRecord
	tables            []*pb.TableRecord
	buckets           []*pb.BucketRecord
	bucketAt          map[string]int // position in buckets by bucket key
	droppedTables     []uint64
	partitions        []*pb.PartitionRecord
	droppedPartitions []uint64
	droppedNodes      []uint32
	users             []*pb.UserRecord
	droppedUsers      []string
	aclsSet           bool
	acls              []*pb.AclEntry
	writerKey         []byte
	moveBounds        *pb.MoveBounds
	// removedReplicas: the nodes each changed bucket no longer has among
	// its replicas, so they delete their copies.
	removedReplicas []*pb.ReplicaRemoval
}

func (c *changeSet) empty() bool {
	return len(c.nodes) == 0 && len(c.tables) == 0 && len(c.buckets) == 0 && len(c.droppedTables) == 0 && len(c.droppedNodes) == 0 &&
		len(c.users) == 0 && len(c.droppedUsers) == 0 && !c.aclsSet && c.writerKey == nil && c.moveBounds == nil &&
		len(c.removedReplicas) == 0 && len(c.partitions) == 0 && len(c.droppedPartitions) == 0
}

// update is the feed message of the changes at index, or nil when there are
// none. The records are copies: the command's result may share the
// originals with the caller.
func (c *changeSet) update(index uint64) *pb.MetadataUpdate {
	if c.empty() {
		return nil
	}
	u := &pb.MetadataUpdate{
		Index:             index,
		Nodes:             c.nodes,
		Tables:            c.tables,
		Buckets:           c.buckets,
		DroppedTables:     c.droppedTables,
		DroppedNodes:      c.droppedNodes,
		Users:             c.users,
		DroppedUsers:      c.droppedUsers,
		AclsSet:           c.aclsSet,
		Acls:              c.acls,
		WriterKey:         c.writerKey,
		MoveBounds:        c.moveBounds,
		RemovedReplicas:   c.removedReplicas,
		Partitions:        c.partitions,
		DroppedPartitions: c.droppedPartitions,
	}
	return proto.CloneOf(u)
}

// putNode stores a node record and lists it as changed.
func (a *applier) putNode(n *pb.NodeRecord) error {
	if err := putRecord(a.tx.Bucket(bucketNodes), nodeKey(n.GetId()), n); err != nil {
		return err
	}
	a.changes.nodes = append(a.changes.nodes, n)
	return nil
}

// putTable stores a table record and lists it as changed.
func (a *applier) putTable(t *pb.TableRecord) error {
	if err := putRecord(a.tx.Bucket(bucketTables), tableKey(t.GetDatabaseId(), t.GetName()), t); err != nil {
		return err
	}
	a.changes.tables = append(a.changes.tables, t)
	return nil
}

// putBucket stores a bucket record and lists it as changed, and as an edit
// of the bucket index.
func (a *applier) putBucket(b *pb.BucketRecord) error {
	key := bucketKey(b.GetTableId(), b.GetBucket())
	buckets := a.tx.Bucket(bucketBuckets)
	edit := bucketEdit{old: &pb.BucketRecord{}, new: proto.CloneOf(b)}
	if ok, err := getRecord(buckets, key, edit.old); err != nil {
		return err
	} else if !ok {
		edit.old = nil
	}
	if err := putRecord(buckets, key, b); err != nil {
		return err
	}
	a.edits = append(a.edits, edit)
	a.changes.noteRemovedReplicas(edit.old, b)
	k := string(key)
	if i, ok := a.changes.bucketAt[k]; ok {
		a.changes.buckets[i] = b
		return nil
	}
	if a.changes.bucketAt == nil {
		a.changes.bucketAt = make(map[string]int)
	}
	a.changes.bucketAt[k] = len(a.changes.buckets)
	a.changes.buckets = append(a.changes.buckets, b)
	return nil
}

// noteRemovedReplicas lists the replicas of old that b no longer has. A
// command that changes a bucket twice lists each removal once.
func (c *changeSet) noteRemovedReplicas(old, b *pb.BucketRecord) {
	if old == nil {
		return
	}
	for _, id := range old.GetReplicas() {
		if slices.Contains(b.GetReplicas(), id) {
			continue
		}
		i := slices.IndexFunc(c.removedReplicas, func(r *pb.ReplicaRemoval) bool {
			return r.GetTableId() == b.GetTableId() && r.GetBucket() == b.GetBucket()
		})
		if i < 0 {
			i = len(c.removedReplicas)
			c.removedReplicas = append(c.removedReplicas, &pb.ReplicaRemoval{TableId: b.GetTableId(), Bucket: b.GetBucket()})
		}
		if r := c.removedReplicas[i]; !slices.Contains(r.Nodes, id) {
			r.Nodes = append(r.Nodes, id)
		}
	}
}

// dropTableRecord deletes a table, its partitions and its buckets and
// lists them as dropped.
func (a *applier) dropTableRecord(t *pb.TableRecord) error {
	if err := a.dropPartitionsOf(t.GetId()); err != nil {
		return err
	}
	deleted, err := deleteTable(a.tx, t)
	if err != nil {
		return err
	}
	for _, b := range deleted {
		a.edits = append(a.edits, bucketEdit{old: b})
	}
	a.changes.droppedTables = append(a.changes.droppedTables, t.GetId())
	return nil
}
