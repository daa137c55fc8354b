package metastate

import (
	"context"
	"slices"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// Bounds of the metadata feed kept in memory for Changes. A watcher further
// behind than the feed reaches gets a full Image instead, so the bounds
// trade memory for how often a slow watcher needs one.
const (
	// MaxFeedUpdates bounds the updates kept: one per applied command that
	// changed nodes, tables or buckets.
	MaxFeedUpdates = 4096
	// MaxFeedBytes bounds the encoded size of the updates kept. The newest
	// update is kept whatever its size. An image of 100,000 buckets is about
	// 2 MiB: a watcher further behind than this much is better served by one.
	MaxFeedBytes = 8 << 20
)

// feed is the in-memory tail of the metadata stream: the updates of the
// commands applied after index from, and the applied index that WaitApplied
// follows. Apply appends after its commit; Open and Restore reset it.
type feed struct {
	mu sync.Mutex
	// applied is the index of the last committed Apply.
	applied uint64
	// from: updates holds every update with a higher index.
	from uint64
	// updates, oldest first, all above from.
	updates []*pb.MetadataUpdate
	// bytes is the encoded size of updates.
	bytes int
	// wake is closed and replaced when applied moves, the feed resets or
	// the state closes.
	wake   chan struct{}
	closed bool

	// maxUpdates and maxBytes are MaxFeedUpdates and MaxFeedBytes; tests
	// lower them.
	maxUpdates, maxBytes int
}

func newFeed(applied uint64) *feed {
	return &feed{applied: applied, from: applied, wake: make(chan struct{}),
		maxUpdates: MaxFeedUpdates, maxBytes: MaxFeedBytes}
}

// append records that index was applied, with the update of what it
// changed (nil: nothing), and wakes the waiters. The feed keeps u: it must
// not be shared.
func (f *feed) append(index uint64, u *pb.MetadataUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.applied = index
	if u != nil {
		f.updates = append(f.updates, u)
		f.bytes += proto.Size(u)
		for len(f.updates) > f.maxUpdates || (f.bytes > f.maxBytes && len(f.updates) > 1) {
			old := f.updates[0]
			f.updates[0] = nil
			f.updates = f.updates[1:]
			f.bytes -= proto.Size(old)
			f.from = old.GetIndex()
		}
	}
	f.wakeLocked()
}

// reset empties the feed at the applied index of a newly opened or
// restored file and wakes the waiters.
func (f *feed) reset(applied uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied, f.from, f.updates, f.bytes = applied, applied, nil, 0
	f.wakeLocked()
}

// close empties the feed for good and wakes the waiters.
func (f *feed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed, f.updates, f.bytes = true, nil, 0
	close(f.wake)
}

func (f *feed) appliedIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

func (f *feed) wakeLocked() {
	close(f.wake)
	f.wake = make(chan struct{})
}

// Changes returns the metadata updates of the commands applied after index
// after, oldest first: copies the caller may keep. ok is false when the
// feed cannot show that the list is complete: after is below the index the
// feed starts at (the applied index when the state was opened or restored,
// later the last update evicted to stay within MaxFeedUpdates and
// MaxFeedBytes), or the state is closed. The caller then sends an Image and
// continues from its index. after at or above the applied index: no
// updates, ok.
//
// Changes may lag an Image by the command being committed: an Image at an
// index the feed has not reached yet gets no updates, and WaitApplied(index)
// returns only once the feed has it.
func (s *State) Changes(after uint64) (updates []*pb.MetadataUpdate, ok bool) {
	return s.ChangesFor(after, 0, 0)
}

// ChangesFor is Changes for one watcher: for node (0: every node) only the
// buckets that have it among their replicas (every node, table and dropped
// id stays), and at most maxBytes of encoded updates (at least one; 0: no
// bound), so a watcher far behind takes the feed a part at a time. An update
// left with nothing for the node is left out, but for the last one looked
// at, which comes empty: the watcher still learns how far it is.
func (s *State) ChangesFor(after uint64, node uint32, maxBytes int) (updates []*pb.MetadataUpdate, ok bool) {
	f := s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return nil, false
	case after >= f.applied:
		return nil, true
	case after < f.from:
		return nil, false
	}
	i := sort.Search(len(f.updates), func(i int) bool { return f.updates[i].GetIndex() > after })
	var out []*pb.MetadataUpdate
	size := 0
	for j, u := range f.updates[i:] {
		c := updateFor(u, node)
		last := i+j == len(f.updates)-1
		if isEmptyUpdate(c) && !last {
			continue
		}
		out = append(out, c)
		size += proto.Size(c)
		if maxBytes > 0 && size >= maxBytes {
			break
		}
	}
	return out, true
}

// updateFor copies the part of u that node follows (0: all of it).
func updateFor(u *pb.MetadataUpdate, node uint32) *pb.MetadataUpdate {
	if node == 0 {
		return proto.CloneOf(u)
	}
	c := &pb.MetadataUpdate{Index: u.GetIndex(), Full: u.GetFull(), Nodes: u.GetNodes(), Tables: u.GetTables(),
		DroppedTables: u.GetDroppedTables(), DroppedNodes: u.GetDroppedNodes(),
		Users: u.GetUsers(), DroppedUsers: u.GetDroppedUsers(), AclsSet: u.GetAclsSet(), Acls: u.GetAcls(), WriterKey: u.GetWriterKey(),
		MoveBounds: u.GetMoveBounds(), Partitions: u.GetPartitions(), DroppedPartitions: u.GetDroppedPartitions()}
	for _, b := range u.GetBuckets() {
		if replicaOf(b, node) {
			c.Buckets = append(c.Buckets, b)
		}
	}
	for _, r := range u.GetRemovedReplicas() {
		if slices.Contains(r.GetNodes(), node) {
			c.RemovedReplicas = append(c.RemovedReplicas, &pb.ReplicaRemoval{TableId: r.GetTableId(), Bucket: r.GetBucket(), Nodes: []uint32{node}})
		}
	}
	return proto.CloneOf(c)
}

// replicaOf reports whether node is among b's replicas.
func replicaOf(b *pb.BucketRecord, node uint32) bool { return slices.Contains(b.GetReplicas(), node) }

// isEmptyUpdate reports whether u carries no record and no drop.
func isEmptyUpdate(u *pb.MetadataUpdate) bool {
	return len(u.GetNodes())+len(u.GetTables())+len(u.GetBuckets())+len(u.GetDroppedTables())+len(u.GetDroppedNodes())+
		len(u.GetUsers())+len(u.GetDroppedUsers())+len(u.GetRemovedReplicas())+len(u.GetPartitions())+len(u.GetDroppedPartitions()) == 0 &&
		!u.GetAclsSet() && u.GetWriterKey() == nil &&
		u.GetMoveBounds() == nil
}

// WaitApplied blocks until the applied index is above after and returns
// it; or until ctx ends (ctx.Err()) or the state is closed (ErrClosed). A
// Restore wakes it: it returns if the restored index is above after and
// waits on otherwise.
func (s *State) WaitApplied(ctx context.Context, after uint64) (uint64, error) {
	f := s.feed
	for {
		f.mu.Lock()
		applied, wake, closed := f.applied, f.wake, f.closed
		f.mu.Unlock()
		switch {
		case closed:
			return 0, ErrClosed
		case applied > after:
			return applied, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
