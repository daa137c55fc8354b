package metastate

import (
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// bucketIndex is what the state machine derives from the bucket records so
// that no command reads the whole catalog: each node's replicas, its load,
// and the offline buckets. It lives in memory only (the file and its
// snapshots are as they were), is built from the file when a command first
// needs it after Open or Restore, and follows every committed command's
// bucket writes. Apply alone reads and changes it, under applyMu.
//
// It answers for the state before the command that reads it: a command
// reads it before writing any bucket (bucketIndex enforces that), and its
// writes reach the index only once they commit.
type bucketIndex struct {
	// byNode: node id → table id → the numbers of the table's buckets that
	// have the node among their replicas, ascending.
	byNode map[uint32]map[uint64][]int32
	// load is each node's replicas and preferred leaderships, Place's input.
	load map[uint32]NodeLoad
	// offline holds the buckets without a leader.
	offline map[bucketRef]struct{}
}

// bucketRef names a bucket; sorted by table, then number, it is in key
// order.
type bucketRef struct {
	table  uint64
	bucket int32
}

func compareRefs(a, b bucketRef) int {
	if c := cmp.Compare(a.table, b.table); c != 0 {
		return c
	}
	return cmp.Compare(a.bucket, b.bucket)
}

// bucketEdit is one bucket write of a command: old is the record it
// replaced (nil: a new bucket), new what it wrote (nil: deleted).
type bucketEdit struct {
	old, new *pb.BucketRecord
}

func newBucketIndex() *bucketIndex {
	return &bucketIndex{byNode: map[uint32]map[uint64][]int32{}, load: map[uint32]NodeLoad{},
		offline: map[bucketRef]struct{}{}}
}

// buildBucketIndex reads every bucket record of tx.
func buildBucketIndex(tx *bolt.Tx) (*bucketIndex, error) {
	x := newBucketIndex()
	err := tx.Bucket(bucketBuckets).ForEach(func(k, v []byte) error {
		b := &pb.BucketRecord{}
		if err := proto.Unmarshal(v, b); err != nil {
			return corruptRecord(k, err)
		}
		x.add(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}

// apply folds a committed command's bucket writes in, in order.
func (x *bucketIndex) apply(edits []bucketEdit) {
	for _, e := range edits {
		switch {
		case e.old != nil && e.new != nil && slices.Equal(e.old.GetReplicas(), e.new.GetReplicas()):
			x.setOffline(e.new) // the replicas and so the load stay
		default:
			if e.old != nil {
				x.remove(e.old)
			}
			if e.new != nil {
				x.add(e.new)
			}
		}
	}
}

func (x *bucketIndex) add(b *pb.BucketRecord) {
	ref := bucketRef{b.GetTableId(), b.GetBucket()}
	for i, r := range b.GetReplicas() {
		tables := x.byNode[r]
		if tables == nil {
			tables = map[uint64][]int32{}
			x.byNode[r] = tables
		}
		nums := tables[ref.table]
		if j, found := slices.BinarySearch(nums, ref.bucket); !found {
			tables[ref.table] = slices.Insert(nums, j, ref.bucket)
		}
		l := x.load[r]
		l.Replicas++
		if i == 0 {
			l.Leaders++
		}
		x.load[r] = l
	}
	x.setOffline(b)
}

func (x *bucketIndex) remove(b *pb.BucketRecord) {
	ref := bucketRef{b.GetTableId(), b.GetBucket()}
	for i, r := range b.GetReplicas() {
		tables := x.byNode[r]
		nums := tables[ref.table]
		if j, found := slices.BinarySearch(nums, ref.bucket); found {
			nums = slices.Delete(nums, j, j+1)
		}
		switch {
		case len(nums) > 0:
			tables[ref.table] = nums
		case len(tables) > 1:
			delete(tables, ref.table)
		default:
			delete(x.byNode, r)
		}
		l := x.load[r]
		l.Replicas--
		if i == 0 {
			l.Leaders--
		}
		if l == (NodeLoad{}) {
			delete(x.load, r)
		} else {
			x.load[r] = l
		}
	}
	delete(x.offline, ref)
}

func (x *bucketIndex) setOffline(b *pb.BucketRecord) {
	ref := bucketRef{b.GetTableId(), b.GetBucket()}
	if b.GetLeader() == 0 {
		x.offline[ref] = struct{}{}
	} else {
		delete(x.offline, ref)
	}
}

// bucketsOf lists, in key order, the buckets that have one of nodes among
// their replicas, with the offline buckets too when offline is set.
func (x *bucketIndex) bucketsOf(nodes []uint32, offline bool) []bucketRef {
	var refs []bucketRef
	for _, n := range nodes {
		for table, nums := range x.byNode[n] {
			for _, b := range nums {
				refs = append(refs, bucketRef{table, b})
			}
		}
	}
	if offline {
		for ref := range x.offline {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, compareRefs)
	return slices.Compact(refs)
}

// bucketIndex returns the index as of the state before this command,
// building it from the file at the first use since Open or Restore. A
// command must read it before it writes a bucket.
func (a *applier) bucketIndex() (*bucketIndex, error) {
	if len(a.edits) > 0 {
		return nil, errorf(codeInternal, "metastate: the bucket index is read after the command wrote buckets")
	}
	if a.state.index == nil {
		x, err := buildBucketIndex(a.tx)
		if err != nil {
			return nil, err
		}
		a.state.index = x
	}
	return a.state.index, nil
}

// changeBucketsOf runs change on every bucket in refs (in key order), stores
// the buckets it reports changed and returns how many did.
func (a *applier) changeBucketsOf(refs []bucketRef, change func(b *pb.BucketRecord) bool) (int, error) {
	var changed []*pb.BucketRecord
	buckets := a.tx.Bucket(bucketBuckets)
	for _, ref := range refs {
		b, err := getIndexed(buckets, ref)
		if err != nil {
			return 0, err
		}
		if change(b) {
			changed = append(changed, b)
		}
	}
	for _, b := range changed {
		if err := a.putBucket(b); err != nil {
			return 0, err
		}
	}
	return len(changed), nil
}

// getIndexed reads a bucket the index names. One that does not exist means
// the index no longer follows the file: ErrCorrupt, so the replica stops
// rather than let its commands differ from the others'.
func getIndexed(buckets *bolt.Bucket, ref bucketRef) (*pb.BucketRecord, error) {
	b := &pb.BucketRecord{}
	ok, err := getRecord(buckets, bucketKey(ref.table, ref.bucket), b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: the bucket index lists table %d bucket %d, which does not exist", ErrCorrupt, ref.table, ref.bucket)
	}
	return b, nil
}
