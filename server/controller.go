package server

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/floedb/floe/transport/gossip"
	"github.com/floedb/floe/transport/pb"
)

// controllerTick paces the controller's liveness checks.
const controllerTick = 100 * time.Millisecond

// controllerLoop runs on every meta node and acts only while it leads Raft:
// tablet nodes that gossip reports dead for longer than the grace period,
// or that left, are fenced (FenceNodes): their leaderships move to another
// in-sync replica with a new epoch and they leave the ISRs; offline buckets
// get a leader back when an in-sync replica is alive again. It keeps no
// state that matters for safety: a new controller starts its grace periods
// afresh from what gossip says now.
func (s *Server) controllerLoop(ctx context.Context) {
	t := time.NewTicker(controllerTick)
	defer t.Stop()
	deadSince := map[uint32]time.Time{}
	wasLeader := false
	var view metadataView
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, g := s.node.Load(), s.gossip.Load()
		if n == nil || g == nil || !n.IsLeader() {
			wasLeader = false
			continue
		}
		if !wasLeader {
			clear(deadSince)
			wasLeader = true
		}
		img, err := view.current(n.State())
		if err != nil {
			continue
		}
		gone := s.goneNodes(img, g, deadSince)
		if !needsFencing(img, gone) {
			continue
		}
		s.log.Info("controller: fencing tablet nodes", "gone", gone)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = n.Propose(cctx, &pb.Command{RequestId: []byte(newID()),
			Op: &pb.Command_FenceNodes{FenceNodes: &pb.FenceNodes{Gone: gone}}})
		cancel()
		if err != nil {
			s.log.Warn("controller: fencing failed", "err", err)
		}
	}
}

// metadataState is what metadataView reads: metastate.State.
type metadataState interface {
	AppliedIndex() uint64
	Image() (*pb.MetadataUpdate, error)
	Changes(after uint64) ([]*pb.MetadataUpdate, bool)
}

// metadataView keeps the controller's copy of the nodes and buckets up to
// date from the changes the state machine applied since the last tick,
// reading a full image only at first or when the change feed no longer
// reaches back that far. While nothing changes a tick reads nothing, and a
// change costs what it changed, not the whole catalog.
type metadataView struct {
	index   uint64 // applied through
	img     *pb.MetadataUpdate
	nodes   map[uint32]*pb.NodeRecord
	buckets map[bucketRef]*pb.BucketRecord
}

// bucketRef names a bucket.
type bucketRef struct {
	table  uint64
	bucket int32
}

// current returns the nodes and buckets (as an image) as of at least st's
// applied index when called.
func (v *metadataView) current(st metadataState) (*pb.MetadataUpdate, error) {
	applied := st.AppliedIndex()
	if v.img != nil && applied == v.index {
		return v.img, nil
	}
	if v.img != nil {
		if updates, ok := st.Changes(v.index); ok {
			for _, u := range updates {
				v.apply(u)
			}
			v.index = applied
			if n := len(updates); n > 0 {
				v.index = max(applied, updates[n-1].GetIndex())
			}
			v.rebuild()
			return v.img, nil
		}
	}
	img, err := st.Image()
	if err != nil {
		return nil, err
	}
	v.nodes, v.buckets = map[uint32]*pb.NodeRecord{}, map[bucketRef]*pb.BucketRecord{}
	v.apply(img)
	v.index = img.GetIndex()
	v.rebuild()
	return v.img, nil
}

// apply folds one update into the copy.
func (v *metadataView) apply(u *pb.MetadataUpdate) {
	if u.GetFull() {
		clear(v.nodes)
		clear(v.buckets)
	}
	for _, n := range u.GetNodes() {
		v.nodes[n.GetId()] = n
	}
	for _, id := range u.GetDroppedNodes() {
		delete(v.nodes, id)
	}
	for _, t := range u.GetDroppedTables() {
		for ref := range v.buckets {
			if ref.table == t {
				delete(v.buckets, ref)
			}
		}
	}
	for _, b := range u.GetBuckets() {
		v.buckets[bucketRef{b.GetTableId(), b.GetBucket()}] = b
	}
}

// rebuild makes the image the controller reads from the maps.
func (v *metadataView) rebuild() {
	img := &pb.MetadataUpdate{Index: v.index, Full: true,
		Nodes: make([]*pb.NodeRecord, 0, len(v.nodes)), Buckets: make([]*pb.BucketRecord, 0, len(v.buckets))}
	for _, n := range v.nodes {
		img.Nodes = append(img.Nodes, n)
	}
	slices.SortFunc(img.Nodes, func(a, b *pb.NodeRecord) int { return cmp.Compare(a.GetId(), b.GetId()) })
	for _, b := range v.buckets { // in no order: the controller's rules need none
		img.Buckets = append(img.Buckets, b)
	}
	v.img = img
}

// goneNodes lists registered tablet nodes that left, or that gossip has not
// seen alive for the grace period.
func (s *Server) goneNodes(img *pb.MetadataUpdate, g *gossip.Gossip, deadSince map[uint32]time.Time) []uint32 {
	now := time.Now()
	var gone []uint32
	for _, rec := range img.Nodes {
		if !slices.Contains(rec.Roles, RoleTablet) {
			continue
		}
		m, ok := g.Member(rec.Id)
		switch {
		case aliveAsRegistered(rec, m, ok):
			delete(deadSince, rec.Id)
		case ok && m.State == gossip.StateLeft && m.Incarnation == rec.Incarnation:
			gone = append(gone, rec.Id)
		default:
			since, seen := deadSince[rec.Id]
			if !seen {
				deadSince[rec.Id] = now
				since = now
			}
			if now.Sub(since) >= s.cfg.LivenessGrace {
				gone = append(gone, rec.Id)
			}
		}
	}
	slices.Sort(gone)
	return gone
}

// aliveAsRegistered reports whether gossip's member m (ok: gossip knows the
// node) is the registered node rec alive: the same incarnation, so the same
// data folder.
func aliveAsRegistered(rec *pb.NodeRecord, m gossip.Member, ok bool) bool {
	return ok && m.State == gossip.StateAlive && m.Incarnation == rec.Incarnation
}

// liveTablets lists the registered tablet nodes gossip reports alive with
// their registered incarnation: the nodes an election may choose.
func liveTablets(nodes []*pb.NodeRecord, g *gossip.Gossip) []uint32 {
	var live []uint32
	for _, rec := range nodes {
		if m, ok := g.Member(rec.Id); slices.Contains(rec.Roles, RoleTablet) && aliveAsRegistered(rec, m, ok) {
			live = append(live, rec.Id)
		}
	}
	return live
}

// needsFencing reports whether FenceNodes(gone) would change any bucket.
func needsFencing(img *pb.MetadataUpdate, gone []uint32) bool {
	for _, b := range img.Buckets {
		if slices.Contains(gone, b.Leader) {
			return true
		}
		if b.Leader == 0 && slices.ContainsFunc(b.Isr, func(id uint32) bool { return !slices.Contains(gone, id) }) {
			return true
		}
		if len(b.Isr) > 1 && slices.ContainsFunc(b.Isr, func(id uint32) bool { return id != b.Leader && slices.Contains(gone, id) }) {
			return true
		}
	}
	return false
}
