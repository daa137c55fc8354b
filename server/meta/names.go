package meta

import (
	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// bucketNames names the tables and partitions buckets are keyed by, as a
// view holds them: the state machine keys a partition's buckets by the
// partition's id, and answers to operators name them by database, table
// and partition. A partitioned table's partitions are read once, when a
// bucket of one is first named.
type bucketNames struct {
	v *metastate.View
	// tables maps table and partition ids to their table's record.
	tables map[uint64]*pb.TableRecord
	// partitions names the partitions of the tables in read.
	partitions map[uint64]string
	read       map[uint64]bool
}

func newBucketNames(v *metastate.View) (*bucketNames, error) {
	tables, err := v.TablesByID()
	if err != nil {
		return nil, err
	}
	return &bucketNames{v: v, tables: tables, partitions: map[uint64]string{}, read: map[uint64]bool{}}, nil
}

// name returns the table of id (a table's or a partition's) and the
// partition's name, "" for a table; a nil table when it was dropped.
func (n *bucketNames) name(id uint64) (*pb.TableRecord, string, error) {
	t := n.tables[id]
	if t == nil || t.GetId() == id {
		return t, "", nil
	}
	if !n.read[t.GetId()] {
		n.read[t.GetId()] = true
		parts, err := n.v.Partitions(t.GetId())
		if err != nil {
			return nil, "", err
		}
		for _, p := range parts {
			n.partitions[p.GetId()] = p.GetName()
		}
	}
	return t, n.partitions[id], nil
}

// partitionsOf names the partitions of img by id.
func partitionsOf(img *pb.MetadataUpdate) map[uint64]*pb.PartitionRecord {
	out := make(map[uint64]*pb.PartitionRecord, len(img.GetPartitions()))
	for _, p := range img.GetPartitions() {
		out[p.GetId()] = p
	}
	return out
}

// qualifiedName is database.table, or database.table/partition.
func qualifiedName(t *pb.TableRecord, partition string) string {
	name := t.GetDatabase() + "." + t.GetName()
	if partition != "" {
		name += "/" + partition
	}
	return name
}
