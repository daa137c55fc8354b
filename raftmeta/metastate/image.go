package metastate

import (
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Image is the whole metadata stream as of one applied index, read in one
// transaction: every node (by id), table (by database id, then name) and
// bucket (by table id, then number), with Full set. A watcher starts from
// it and continues with Changes(image.Index). The records belong to the
// caller.
func (s *State) Image() (*pb.MetadataUpdate, error) {
	u := &pb.MetadataUpdate{Full: true}
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if u.Index, err = getU64(tx.Bucket(bucketMeta), keyAppliedIndex); err != nil {
			return err
		}
		if u.Nodes, err = listNodes(tx); err != nil {
			return err
		}
		if u.Tables, err = decodeAll(tx.Bucket(bucketTables), func() *pb.TableRecord { return &pb.TableRecord{} }); err != nil {
			return err
		}
		u.Buckets, err = decodeAll(tx.Bucket(bucketBuckets), func() *pb.BucketRecord { return &pb.BucketRecord{} })
		return err
	})
	if err != nil {
		return nil, err
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
