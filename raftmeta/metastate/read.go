package metastate

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// View reads the state as of one moment: every read of a View sees the same
// applied index. It is valid only inside the function given to Read.
type View struct {
	tx *bolt.Tx
}

// Read runs fn with a consistent view of the state, concurrently with Apply
// and blocking Restore until it returns. fn must not call the State's own
// methods (a waiting Restore would deadlock them). Records it returns belong
// to the caller.
func (s *State) Read(fn func(v *View) error) error {
	return s.view(func(tx *bolt.Tx) error { return fn(&View{tx: tx}) })
}

// AppliedIndex is the index of the last command the view includes.
func (v *View) AppliedIndex() (uint64, error) {
	return getU64(v.tx.Bucket(bucketMeta), keyAppliedIndex)
}

// ClusterID is the cluster id, or "" before InitCluster.
func (v *View) ClusterID() string {
	return string(v.tx.Bucket(bucketMeta).Get(keyClusterID))
}

// Databases returns every database, sorted by name.
func (v *View) Databases() ([]*pb.DatabaseRecord, error) { return listDatabases(v.tx) }

// Database returns a database; UNKNOWN_DATABASE when there is none.
func (v *View) Database(name string) (*pb.DatabaseRecord, error) {
	db, err := getDatabase(v.tx, name)
	if err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errorf(codeUnknownDatabase, "database %.256q does not exist", name)
	}
	return db, nil
}

// Tables returns a database's tables, sorted by name; UNKNOWN_DATABASE when
// there is no such database.
func (v *View) Tables(database string) ([]*pb.TableRecord, error) {
	db, err := v.Database(database)
	if err != nil {
		return nil, err
	}
	return listTables(v.tx, db.GetId())
}

// Table returns a table and its buckets (sorted by number); UNKNOWN_DATABASE
// or UNKNOWN_TABLE when they do not exist.
func (v *View) Table(database, name string) (*pb.TableRecord, []*pb.BucketRecord, error) {
	db, err := v.Database(database)
	if err != nil {
		return nil, nil, err
	}
	t, err := getTable(v.tx, db.GetId(), name)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, nil, errorf(codeUnknownTable, "table %.256q does not exist", database+"."+name)
	}
	buckets, err := listBuckets(v.tx, t.GetId())
	if err != nil {
		return nil, nil, err
	}
	return t, buckets, nil
}

// TablesByID maps the id of every table and partition (the ids buckets
// are keyed by) to the record of its table.
func (v *View) TablesByID() (map[uint64]*pb.TableRecord, error) { return tablesByID(v.tx) }

// RemovalRefusal is what RemoveNode of node id would be refused with for
// the data it holds (the only in-sync copy or the last replica of a
// bucket), or nil; the proposer asks it first, so such a removal never
// reaches the Raft log. It reads every bucket.
func (v *View) RemovalRefusal(id uint32) error {
	var held []*pb.BucketRecord
	err := v.tx.Bucket(bucketBuckets).ForEach(func(k, val []byte) error {
		b := &pb.BucketRecord{}
		if err := proto.Unmarshal(val, b); err != nil {
			return corruptRecord(k, err)
		}
		if replicaOf(b, id) {
			held = append(held, b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return refuseDataLoss(v.tx, id, held)
}

// Nodes returns every registered node, sorted by id.
func (v *View) Nodes() ([]*pb.NodeRecord, error) { return listNodes(v.tx) }

// Node returns a node; UNKNOWN_NODE when it is not registered.
func (v *View) Node(id uint32) (*pb.NodeRecord, error) {
	n := &pb.NodeRecord{}
	ok, err := getRecord(v.tx.Bucket(bucketNodes), nodeKey(id), n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(codeUnknownNode, "node %d is not registered", id)
	}
	return n, nil
}

// Bucket returns one bucket of a table; UNKNOWN_TABLE when the table or the
// bucket does not exist.
func (v *View) Bucket(tableID uint64, bucket int32) (*pb.BucketRecord, error) {
	b := &pb.BucketRecord{}
	ok, err := getRecord(v.tx.Bucket(bucketBuckets), bucketKey(tableID, bucket), b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorf(codeUnknownTable, "table %d has no bucket %d", tableID, bucket)
	}
	return b, nil
}

// Databases returns every database, sorted by name. Errors (a closed state,
// a corrupt file) are logged and read as no databases; use Read to see them.
func (s *State) Databases() []*pb.DatabaseRecord {
	var out []*pb.DatabaseRecord
	s.logReadError("databases", s.Read(func(v *View) (err error) {
		out, err = v.Databases()
		return err
	}))
	return out
}

// Database returns a database; UNKNOWN_DATABASE when there is none.
func (s *State) Database(name string) (*pb.DatabaseRecord, error) {
	var out *pb.DatabaseRecord
	err := s.Read(func(v *View) (err error) {
		out, err = v.Database(name)
		return err
	})
	return out, err
}

// Tables returns a database's tables, sorted by name; UNKNOWN_DATABASE when
// there is no such database.
func (s *State) Tables(database string) ([]*pb.TableRecord, error) {
	var out []*pb.TableRecord
	err := s.Read(func(v *View) (err error) {
		out, err = v.Tables(database)
		return err
	})
	return out, err
}

// Table returns a table and its buckets (sorted by number); UNKNOWN_DATABASE
// or UNKNOWN_TABLE when they do not exist.
func (s *State) Table(database, name string) (*pb.TableRecord, []*pb.BucketRecord, error) {
	var (
		t       *pb.TableRecord
		buckets []*pb.BucketRecord
	)
	err := s.Read(func(v *View) (err error) {
		t, buckets, err = v.Table(database, name)
		return err
	})
	return t, buckets, err
}

// Nodes returns every registered node, sorted by id. Errors are logged and
// read as no nodes; use Read to see them.
func (s *State) Nodes() []*pb.NodeRecord {
	var out []*pb.NodeRecord
	s.logReadError("nodes", s.Read(func(v *View) (err error) {
		out, err = v.Nodes()
		return err
	}))
	return out
}

// Node returns a node; UNKNOWN_NODE when it is not registered.
func (s *State) Node(id uint32) (*pb.NodeRecord, error) {
	var out *pb.NodeRecord
	err := s.Read(func(v *View) (err error) {
		out, err = v.Node(id)
		return err
	})
	return out, err
}

// Bucket returns one bucket of a table; UNKNOWN_TABLE when the table or the
// bucket does not exist.
func (s *State) Bucket(tableID uint64, bucket int32) (*pb.BucketRecord, error) {
	var out *pb.BucketRecord
	err := s.Read(func(v *View) (err error) {
		out, err = v.Bucket(tableID, bucket)
		return err
	})
	return out, err
}

// logReadError logs the failure of a read that returns no error.
func (s *State) logReadError(what string, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		s.logger.Error("metastate: read failed", "what", what, "err", err)
	}
}
