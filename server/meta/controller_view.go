package meta

import (
	"cmp"
	"maps"
	"slices"

	"github.com/floedb/floe/raftmeta/metastate"
	"github.com/floedb/floe/transport/pb"
)

// metadataState is what metadataView reads: metastate.State.
type metadataState interface {
	AppliedIndex() uint64
	Image() (*pb.MetadataUpdate, error)
	Changes(after uint64) ([]*pb.MetadataUpdate, bool)
}

// metadataView is the controller's copy of the nodes and buckets. It
// follows the changes the state machine applied since the last tick and
// reads a full image only at first or when the change feed no longer
// reaches back that far. A change costs what it changed, not the whole
// catalog, and so does the fencing check while the gone nodes stay the
// same: a tick with nothing new reads nothing and checks nothing.
type metadataView struct {
	loaded bool
	index  uint64 // applied through
	nodes  map[uint32]*pb.NodeRecord
	// sortedNodes is nodes by id, rebuilt when a node changes.
	sortedNodes []*pb.NodeRecord
	// buckets by table (or partition) id, then bucket number: a dropped
	// table or partition goes at once.
	buckets map[uint64]map[int32]*pb.BucketRecord

	// cleanFor, when clean, is the gone list for which no bucket but those
	// in changed may need fencing; changed lists the buckets written since.
	clean    bool
	cleanFor []uint32
	changed  map[bucketRef]struct{}

	// moving holds the buckets with a move in progress.
	moving map[bucketRef]struct{}
}

// bucketRef names a bucket.
type bucketRef struct {
	table  uint64
	bucket int32
}

// catchUp brings the copy to at least st's applied index when called.
func (v *metadataView) catchUp(st metadataState) error {
	applied := st.AppliedIndex()
	if v.loaded && applied == v.index {
		return nil
	}
	if v.loaded {
		if updates, ok := st.Changes(v.index); ok {
			for _, u := range updates {
				v.apply(u)
			}
			v.index = applied
			if n := len(updates); n > 0 {
				v.index = max(applied, updates[n-1].GetIndex())
			}
			return nil
		}
	}
	img, err := st.Image()
	if err != nil {
		return err
	}
	v.apply(img)
	v.index, v.loaded = img.GetIndex(), true
	return nil
}

// apply folds one update into the copy.
func (v *metadataView) apply(u *pb.MetadataUpdate) {
	if u.GetFull() || v.nodes == nil {
		v.nodes, v.buckets = map[uint32]*pb.NodeRecord{}, map[uint64]map[int32]*pb.BucketRecord{}
		v.changed, v.clean = map[bucketRef]struct{}{}, false
		v.moving = map[bucketRef]struct{}{}
	}
	for _, n := range u.GetNodes() {
		v.nodes[n.GetId()] = n
	}
	for _, id := range u.GetDroppedNodes() {
		delete(v.nodes, id)
	}
	if u.GetFull() || len(u.GetNodes())+len(u.GetDroppedNodes()) > 0 {
		v.sortedNodes = slices.SortedFunc(maps.Values(v.nodes), func(a, b *pb.NodeRecord) int { return cmp.Compare(a.GetId(), b.GetId()) })
	}
	// A dropped partition's buckets go as a dropped table's: they are
	// keyed by its id.
	for _, ids := range [][]uint64{u.GetDroppedTables(), u.GetDroppedPartitions()} {
		for _, t := range ids {
			for b := range v.buckets[t] {
				delete(v.moving, bucketRef{t, b})
				delete(v.changed, bucketRef{t, b})
			}
			delete(v.buckets, t)
		}
	}
	for _, b := range u.GetBuckets() {
		table := v.buckets[b.GetTableId()]
		if table == nil {
			table = map[int32]*pb.BucketRecord{}
			v.buckets[b.GetTableId()] = table
		}
		table[b.GetBucket()] = b
		if ref := (bucketRef{b.GetTableId(), b.GetBucket()}); b.GetMove() != nil {
			v.moving[ref] = struct{}{}
		} else {
			delete(v.moving, ref)
		}
		if v.clean {
			v.changed[bucketRef{b.GetTableId(), b.GetBucket()}] = struct{}{}
		}
	}
}

// completableMoves lists the buckets whose move CompleteMove would end
// now: every target replica is in the ISR, the bucket has a leader or a
// live target replica to take it. In table and bucket order.
func (v *metadataView) completableMoves(live func(uint32) bool) []*pb.BucketRecord {
	var out []*pb.BucketRecord
	for ref := range v.moving {
		b := v.buckets[ref.table][ref.bucket]
		if b == nil || b.GetMove() == nil {
			continue
		}
		target := b.GetMove().GetTarget()
		if slices.ContainsFunc(target, func(id uint32) bool { return !slices.Contains(b.GetIsr(), id) }) {
			continue
		}
		if (b.GetLeader() == 0 || !slices.Contains(target, b.GetLeader())) && !slices.ContainsFunc(target, live) {
			continue
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *pb.BucketRecord) int {
		return cmp.Or(cmp.Compare(a.GetTableId(), b.GetTableId()), cmp.Compare(a.GetBucket(), b.GetBucket()))
	})
	return out
}

// nodeList is every registered node, by id.
func (v *metadataView) nodeList() []*pb.NodeRecord { return v.sortedNodes }

// needsFencing reports whether FenceNodes(gone) would change any bucket.
// With the same gone list as the last check that found nothing, only the
// buckets written since are checked.
func (v *metadataView) needsFencing(gone []uint32) bool {
	isGone := func(id uint32) bool { return slices.Contains(gone, id) }
	if v.clean && slices.Equal(gone, v.cleanFor) {
		for ref := range v.changed {
			if b := v.buckets[ref.table][ref.bucket]; b != nil && metastate.FenceChanges(b, isGone) {
				v.clean = false
				return true
			}
		}
		clear(v.changed)
		return false
	}
	for _, table := range v.buckets {
		for _, b := range table {
			if metastate.FenceChanges(b, isGone) {
				v.clean = false
				return true
			}
		}
	}
	v.clean, v.cleanFor = true, slices.Clone(gone)
	clear(v.changed)
	return false
}
