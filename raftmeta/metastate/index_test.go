package metastate

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/floedb/floe/transport/pb"
)

// checkIndex fails unless the state's bucket index, when built, is the one
// the file gives.
func checkIndex(t interface{ Fatalf(string, ...any) }, s *State) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if s.index == nil {
		return
	}
	var want *bucketIndex
	err := s.view(func(tx *bolt.Tx) (err error) {
		want, err = buildBucketIndex(tx)
		return err
	})
	if err != nil {
		t.Fatalf("build index: %v", err)
	}
	if !reflect.DeepEqual(s.index, want) {
		t.Fatalf("bucket index %+v, the file gives %+v", s.index, want)
	}
}

// wouldChange lists, in key order, the buckets change would change if run
// on every bucket of the state, as the commands did before the index.
func wouldChange(t *rapid.T, s *State, change func(b *pb.BucketRecord) bool) []bucketRef {
	img, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	var out []bucketRef
	for _, b := range img.GetBuckets() {
		if change(b) {
			out = append(out, bucketRef{b.GetTableId(), b.GetBucket()})
		}
	}
	return out
}

// changedBy lists, in feed order, the buckets the command at index wrote.
func changedBy(h *harness, index uint64) []bucketRef {
	var out []bucketRef
	if u := h.feedAt(index); u != nil {
		for _, b := range u.GetBuckets() {
			out = append(out, bucketRef{b.GetTableId(), b.GetBucket()})
		}
	}
	return out
}

// TestBucketIndexFollowsCommands: whatever the commands, the bucket index
// is the one the file gives (after a Restore too), and FenceNodes and
// RegisterNode, which visit only the buckets the index names, change the
// buckets a visit of every bucket would, in the same order.
func TestBucketIndexFollowsCommands(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		defer h.s.Close()
		const nodes = 5
		incarnation := map[uint32]int{}
		register := func(id uint32) {
			h.ok(registerIncarnation(id, fmt.Sprint("inc-", incarnation[id])))
		}
		for id := uint32(1); id <= nodes; id++ {
			register(id)
		}
		h.ok(createDB("db"))
		node := rapid.Uint32Range(1, nodes+1) // node 6 is never registered
		tables := 0
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 8).Draw(rt, "op") {
			case 0, 1:
				tables++
				h.apply(createTable(ordersTable("db", fmt.Sprint("t", tables), func(c *pb.CreateTable) {
					c.Buckets = rapid.Int32Range(1, 6).Draw(rt, "buckets")
					c.Replication = rapid.Int32Range(1, 3).Draw(rt, "replication")
				})))
			case 2:
				h.apply(dropTable("db", fmt.Sprint("t", rapid.IntRange(1, tables+1).Draw(rt, "table")), true))
			case 3:
				gone := rapid.SliceOfN(node, 0, 3).Draw(rt, "gone")
				want := wouldChange(rt, h.s, func(b *pb.BucketRecord) bool { return FenceChanges(b, goneSet(gone...)) })
				h.apply(fenceNodes(gone...))
				if got := changedBy(h, h.index); !slices.Equal(got, want) {
					rt.Fatalf("FenceNodes(%v) changed %v, a visit of every bucket %v", gone, got, want)
				}
			case 4:
				id := rapid.Uint32Range(1, nodes).Draw(rt, "registers")
				change := func(b *pb.BucketRecord) bool { return releadBucket(b, id) }
				if rapid.Bool().Draw(rt, "wiped") {
					incarnation[id]++
					change = func(b *pb.BucketRecord) bool { return dropLostReplica(b, id, nil) }
				}
				want := wouldChange(rt, h.s, change)
				register(id)
				if got := changedBy(h, h.index); !slices.Equal(got, want) {
					rt.Fatalf("RegisterNode(%d) changed %v, a visit of every bucket %v", id, got, want)
				}
			case 5:
				live := rapid.SliceOfN(node, 0, 3).Draw(rt, "live")
				h.apply(withTable(fmt.Sprint("t", rapid.IntRange(1, tables+1).Draw(rt, "table")),
					electLeaders(-1, rapid.Bool().Draw(rt, "unclean"), live...)))
			case 6:
				if b := someBucket(rt, h); b != nil {
					h.apply(adjustIsr(b, b.GetLeader()))
				}
			case 7:
				if b := someBucket(rt, h); b != nil && len(b.GetIsr()) > 0 {
					id := rapid.SampledFrom(b.GetIsr()).Draw(rt, "damaged")
					n, err := h.s.Node(id)
					if err != nil {
						rt.Fatal(err)
					}
					h.apply(&pb.Command{Op: &pb.Command_ReportDamagedReplica{ReportDamagedReplica: &pb.ReportDamagedReplica{
						TableId: b.GetTableId(), Bucket: b.GetBucket(), NodeId: id, NodeEpoch: n.GetNodeEpoch()}}})
				}
			case 8:
				h.restoreOwnSnapshot(rt)
			}
			checkIndex(rt, h.s)
			checkImageFor(rt, h.s, node.Draw(rt, "watcher"))
		}
	})
}

// checkImageFor fails unless ImageFor(node) is the full image with only the
// node's buckets.
func checkImageFor(t *rapid.T, s *State, node uint32) {
	full, err := s.Image()
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ImageFor(node)
	if err != nil {
		t.Fatal(err)
	}
	if want := imageForNode(full, node); !proto.Equal(got, want) {
		t.Fatalf("ImageFor(%d) = %v, want %v", node, got, want)
	}
}

// withTable points an ElectLeaders at table db.name.
func withTable(name string, cmd *pb.Command) *pb.Command {
	cmd.GetElectLeaders().Table = name
	return cmd
}

// someBucket is one of the state's buckets, or nil when there are none.
func someBucket(t *rapid.T, h *harness) *pb.BucketRecord {
	buckets := h.buckets()
	if len(buckets) == 0 {
		return nil
	}
	return rapid.SampledFrom(buckets).Draw(t, "bucket")
}

// restoreOwnSnapshot restores the state from a snapshot of itself, which
// drops the bucket index until a command needs it again.
func (h *harness) restoreOwnSnapshot(t *rapid.T) {
	if err := h.s.Restore(snapshotOf(t, h.s)); err != nil {
		t.Fatal(err)
	}
}
