package meta

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// fakeFeed is a metadata state: the nodes and buckets as they are, and the
// updates that led there, of which it keeps the newest keep (0: all).
type fakeFeed struct {
	applied uint64
	nodes   map[uint32]*pb.NodeRecord
	buckets map[bucketRef]*pb.BucketRecord
	updates []*pb.MetadataUpdate
	keep    int
	images  int
}

func newFakeFeed() *fakeFeed {
	return &fakeFeed{nodes: map[uint32]*pb.NodeRecord{}, buckets: map[bucketRef]*pb.BucketRecord{}}
}

func (f *fakeFeed) AppliedIndex() uint64 { return f.applied }

func (f *fakeFeed) Image() (*pb.MetadataUpdate, error) {
	f.images++
	img := &pb.MetadataUpdate{Index: f.applied, Full: true}
	for _, n := range f.nodes {
		img.Nodes = append(img.Nodes, proto.CloneOf(n))
	}
	for _, b := range f.buckets {
		img.Buckets = append(img.Buckets, proto.CloneOf(b))
	}
	return img, nil
}

func (f *fakeFeed) Changes(after uint64) ([]*pb.MetadataUpdate, bool) {
	if len(f.updates) > 0 && after+1 < f.updates[0].GetIndex() {
		return nil, false // evicted
	}
	var out []*pb.MetadataUpdate
	for _, u := range f.updates {
		if u.GetIndex() > after {
			out = append(out, proto.CloneOf(u))
		}
	}
	return out, true
}

// commit applies u as the next command (nil: a command that changed
// nothing).
func (f *fakeFeed) commit(u *pb.MetadataUpdate) {
	f.applied++
	if u == nil {
		return
	}
	u.Index = f.applied
	for _, n := range u.Nodes {
		f.nodes[n.Id] = n
	}
	for _, id := range u.DroppedNodes {
		delete(f.nodes, id)
	}
	for _, t := range slices.Concat(u.DroppedTables, u.DroppedPartitions) {
		for ref := range f.buckets {
			if ref.table == t {
				delete(f.buckets, ref)
			}
		}
	}
	for _, b := range u.Buckets {
		f.buckets[bucketRef{b.TableId, b.Bucket}] = b
	}
	f.updates = append(f.updates, u)
	if f.keep > 0 && len(f.updates) > f.keep {
		f.updates = f.updates[len(f.updates)-f.keep:]
	}
}

// sameImage reports whether two images hold the same nodes and buckets.
func sameImage(a, b *pb.MetadataUpdate) bool {
	key := func(img *pb.MetadataUpdate) []string {
		var out []string
		for _, n := range img.GetNodes() {
			out = append(out, fmt.Sprint("n", n.GetId(), n.GetNodeEpoch()))
		}
		for _, b := range img.GetBuckets() {
			out = append(out, fmt.Sprint("b", b.GetTableId(), b.GetBucket(), b.GetLeader(), b.GetLeaderEpoch(), b.GetIsr()))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// viewImage is the controller's copy as an image.
func viewImage(v *metadataView) *pb.MetadataUpdate {
	img := &pb.MetadataUpdate{Index: v.index, Full: true, Nodes: v.nodeList()}
	for _, table := range v.buckets {
		for _, b := range table {
			img.Buckets = append(img.Buckets, b)
		}
	}
	return img
}

// TestControllerViewFollowsChanges: the controller's copy, kept from the
// change feed, always equals a full image; it reads an image only at first
// and when the feed no longer reaches back to its index, and none while
// nothing changes.
func TestControllerViewFollowsChanges(t *testing.T) {
	for _, keep := range []int{0, 3} {
		t.Run(fmt.Sprint("keep ", keep), func(t *testing.T) {
			f := newFakeFeed()
			f.keep = keep
			rng := rand.New(rand.NewPCG(1, uint64(keep)))
			var v metadataView
			for step := range 2000 {
				switch rng.IntN(6) {
				case 0:
					f.commit(&pb.MetadataUpdate{Nodes: []*pb.NodeRecord{{Id: uint32(rng.IntN(5) + 1), NodeEpoch: uint64(step)}}})
				case 1:
					f.commit(&pb.MetadataUpdate{DroppedNodes: []uint32{uint32(rng.IntN(5) + 1)}})
				case 2:
					table := uint64(rng.IntN(4) + 1)
					var bs []*pb.BucketRecord
					for b := range int32(rng.IntN(3) + 1) {
						bs = append(bs, &pb.BucketRecord{TableId: table, Bucket: b, Leader: uint32(rng.IntN(3)), LeaderEpoch: int32(step)})
					}
					f.commit(&pb.MetadataUpdate{Buckets: bs})
				case 3:
					f.commit(&pb.MetadataUpdate{DroppedTables: []uint64{uint64(rng.IntN(4) + 1)}})
				case 4:
					f.commit(nil)
				case 5:
					// Buckets are keyed by a partition's id as by a table's.
					f.commit(&pb.MetadataUpdate{DroppedPartitions: []uint64{uint64(rng.IntN(4) + 1)}})
				}
				if rng.IntN(3) != 0 {
					continue // ticks see several changes at once now and then
				}
				if err := v.catchUp(f); err != nil {
					t.Fatal(err)
				}
				got := viewImage(&v)
				before := f.images
				want, _ := f.Image()
				f.images = before
				if !sameImage(got, want) {
					t.Fatalf("step %d: the controller's copy %v differs from the image %v", step, got, want)
				}
			}
			if keep == 0 && f.images != 1 {
				t.Fatalf("%d images read with a feed that reaches back to the start, want 1", f.images)
			}
			if keep == 3 && f.images < 2 {
				t.Fatalf("%d images read with a feed of 3 updates: the copy never fell back to an image", f.images)
			}
			images := f.images
			for range 100 {
				v.catchUp(f)
			}
			if f.images != images {
				t.Fatalf("%d images read over 100 ticks with nothing applied", f.images-images)
			}
		})
	}
}

// TestControllerViewDropsPartitions: a dropped partition's buckets leave
// the controller's copy, moving ones included, so it neither elects nor
// completes moves for buckets that no longer exist; its table's other
// partitions stay.
func TestControllerViewDropsPartitions(t *testing.T) {
	f := newFakeFeed()
	var v metadataView
	bucket := func(partition uint64, leader uint32, move bool) *pb.BucketRecord {
		b := &pb.BucketRecord{TableId: partition, Bucket: 0, Replicas: []uint32{1, 2}, Isr: []uint32{1, 2}, Leader: leader}
		if move {
			b.Move = &pb.ReplicaMove{Target: []uint32{1, 2}, Original: []uint32{1, 2}}
		}
		return b
	}
	f.commit(&pb.MetadataUpdate{Nodes: []*pb.NodeRecord{{Id: 1}, {Id: 2}}})
	// Partitions 8 and 9 of one table: 8's bucket misled (its preferred
	// leader is node 1) and moving, 9's led by its preferred leader.
	f.commit(&pb.MetadataUpdate{Buckets: []*pb.BucketRecord{bucket(8, 2, false), bucket(9, 1, false)}})
	if err := v.catchUp(f); err != nil {
		t.Fatal(err)
	}
	live := func(uint32) bool { return true }
	if got := v.misled(live, func(uint32) bool { return false }, 10); len(got) != 1 || got[0].GetTableId() != 8 {
		t.Fatalf("misled %v, want partition 8's bucket", got)
	}
	f.commit(&pb.MetadataUpdate{Buckets: []*pb.BucketRecord{bucket(8, 2, true)}})
	if err := v.catchUp(f); err != nil {
		t.Fatal(err)
	}
	if len(v.completableMoves(live)) != 1 {
		t.Fatal("partition 8's move is not completable")
	}
	f.commit(&pb.MetadataUpdate{DroppedPartitions: []uint64{8}})
	if err := v.catchUp(f); err != nil {
		t.Fatal(err)
	}
	if v.buckets[8] != nil || len(v.moving) != 0 || len(v.completableMoves(live)) != 0 {
		t.Fatalf("the dropped partition's bucket stays: buckets %v, moving %v", v.buckets[8], v.moving)
	}
	if got := v.misled(live, func(uint32) bool { return false }, 10); len(got) != 0 {
		t.Fatalf("misled %v after the drop, want none", got)
	}
	if v.buckets[9] == nil {
		t.Fatal("the table's other partition left the copy")
	}
}

// TestControllerFencingCheck: whether the controller proposes a FenceNodes
// is the state machine's rule over every bucket, also when the check looks
// only at the buckets written since the last one found nothing.
func TestControllerFencingCheck(t *testing.T) {
	f := newFakeFeed()
	rng := rand.New(rand.NewPCG(2, 3))
	var v metadataView
	goneLists := [][]uint32{nil, {1}, {2}, {1, 3}}
	gone := goneLists[0]
	for step := range 3000 {
		switch rng.IntN(8) {
		case 0, 1, 2:
			// A bucket of replicas 1..3 in some order, led by an ISR member
			// or offline.
			replicas := []uint32{1, 2, 3}
			rng.Shuffle(len(replicas), func(i, j int) { replicas[i], replicas[j] = replicas[j], replicas[i] })
			var isr []uint32
			for _, r := range replicas {
				if rng.IntN(3) != 0 {
					isr = append(isr, r)
				}
			}
			var leader uint32
			if len(isr) > 0 && rng.IntN(4) != 0 {
				leader = isr[rng.IntN(len(isr))]
			}
			f.commit(&pb.MetadataUpdate{Buckets: []*pb.BucketRecord{{TableId: uint64(rng.IntN(3) + 1), Bucket: int32(rng.IntN(20)),
				Replicas: replicas, Leader: leader, Isr: isr, BucketEpoch: int32(step)}}})
		case 3:
			f.commit(&pb.MetadataUpdate{DroppedTables: []uint64{uint64(rng.IntN(3) + 1)}})
		case 4:
			gone = goneLists[rng.IntN(len(goneLists))]
		}
		if err := v.catchUp(f); err != nil {
			t.Fatal(err)
		}
		isGone := func(id uint32) bool { return slices.Contains(gone, id) }
		want := slices.ContainsFunc(slices.Collect(maps.Values(f.buckets)), func(b *pb.BucketRecord) bool {
			return metastate.FenceChanges(b, isGone)
		})
		if got := v.needsFencing(gone); got != want {
			t.Fatalf("step %d: needsFencing(%v) = %v, want %v", step, gone, got, want)
		}
	}
}
