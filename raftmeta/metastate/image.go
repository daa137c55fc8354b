package metastate

import (
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/internal/pkgerr"
	"github.com/floedb/floe/transport/pb"
)

// Image is the whole metadata stream as of one applied index, read in one
// transaction: every node (by id), table (by database id, then name) and
// bucket (by table id, then number), with Full set. A watcher starts from
// it and continues with Changes(image.Index). The records belong to the
// caller.
func (s *State) Image() (*pb.MetadataUpdate, error) {
	var u *pb.MetadataUpdate
	err := s.view(func(tx *bolt.Tx) (err error) {
		u, err = imageOf(tx, func() ([]*pb.BucketRecord, error) {
			return decodeAll(tx.Bucket(bucketBuckets), func() *pb.BucketRecord { return &pb.BucketRecord{} })
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// ImageFor is the image a watcher for node follows, to continue with
// ChangesFor(image.Index, node, ...): every node and table, and of the
// buckets those that have node among their replicas (node 0: Image). It
// reads only those buckets, which the bucket index names, so it costs what
// the node holds, not the whole catalog.
func (s *State) ImageFor(node uint32) (*pb.MetadataUpdate, error) {
	if node == 0 {
		return s.Image()
	}
	// The index follows what Apply committed, under applyMu: the read
	// transaction must start at that state, so both are taken under it.
	s.applyMu.Lock()
	applyLocked := true
	defer func() {
		if applyLocked {
			s.applyMu.Unlock()
		}
	}()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, ErrClosed
	}
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, pkgerr.Errorf("metastate", "begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.index == nil {
		if s.index, err = buildBucketIndex(tx); err != nil {
			return nil, err
		}
	}
	refs := s.index.bucketsOf([]uint32{node}, false)
	s.applyMu.Unlock()
	applyLocked = false

	return imageOf(tx, func() ([]*pb.BucketRecord, error) {
		buckets := tx.Bucket(bucketBuckets)
		out := make([]*pb.BucketRecord, len(refs))
		for i, ref := range refs {
			if out[i], err = getIndexed(buckets, ref); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

// imageOf reads an image from tx with the buckets that buckets gives.
func imageOf(tx *bolt.Tx, buckets func() ([]*pb.BucketRecord, error)) (*pb.MetadataUpdate, error) {
	u := &pb.MetadataUpdate{Full: true}
	var err error
	if u.Index, err = getU64(tx.Bucket(bucketMeta), keyAppliedIndex); err != nil {
		return nil, err
	}
	if u.Nodes, err = listNodes(tx); err != nil {
		return nil, err
	}
	if u.Tables, err = decodeAll(tx.Bucket(bucketTables), func() *pb.TableRecord { return &pb.TableRecord{} }); err != nil {
		return nil, err
	}
	if u.Partitions, err = decodeAll(tx.Bucket(bucketPartitions), func() *pb.PartitionRecord { return &pb.PartitionRecord{} }); err != nil {
		return nil, err
	}
	if u.Buckets, err = buckets(); err != nil {
		return nil, err
	}
	if u.Users, err = decodeAll(tx.Bucket(bucketUsers), func() *pb.UserRecord { return &pb.UserRecord{} }); err != nil {
		return nil, err
	}
	if u.Acls, err = listACLs(tx); err != nil {
		return nil, err
	}
	u.AclsSet = true
	if k := tx.Bucket(bucketMeta).Get(keyWriterKey); k != nil {
		u.WriterKey = append([]byte(nil), k...)
	}
	if v := tx.Bucket(bucketMeta).Get(keyMovePlan); v != nil {
		plan := &pb.MovePlan{}
		if err := proto.Unmarshal(v, plan); err != nil {
			return nil, corruptRecord(keyMovePlan, err)
		}
		u.MoveBounds = boundsOf(plan)
	}
	return u, nil
}

// decodeAll decodes every record of a bbolt bucket, in key order.
func decodeAll[M proto.Message](b *bolt.Bucket, newRecord func() M) ([]M, error) {
	var out []M
	err := b.ForEach(func(k, v []byte) error {
		m := newRecord()
		if err := proto.Unmarshal(v, m); err != nil {
			return corruptRecord(k, err)
		}
		out = append(out, m)
		return nil
	})
	return out, err
}
