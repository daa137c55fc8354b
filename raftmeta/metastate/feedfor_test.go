package metastate

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

// imageForNode is an image with only the buckets node follows, as a
// watcher for it should see it.
func imageForNode(img *pb.MetadataUpdate, node uint32) *pb.MetadataUpdate {
	out := proto.CloneOf(img)
	out.Buckets = slices.DeleteFunc(out.Buckets, func(b *pb.BucketRecord) bool { return !replicaOf(b, node) })
	return out
}

// TestChangesFor: a watcher for a node gets, of the buckets, those with the
// node among their replicas, and every node, table and drop; an update
// with nothing left for it is left out unless it is the newest; and a byte
// bound cuts the list after the update that reaches it.
func TestChangesFor(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(3) // 1..3
	h.ok(createDB("db"))
	// Index 5: one bucket on each node.
	h.ok(createTable(ordersTable("db", "t", func(c *pb.CreateTable) { c.Buckets, c.Replication = 3, 1 })))
	b0 := h.bucket(1, 0)
	owner := b0.GetReplicas()[0]
	other := owner%3 + 1
	h.ok(adjustIsr(b0, owner)) // 6: changes nothing, no update
	h.ok(fenceNodes(owner))    // 7: bucket 0 goes offline
	h.ok(fenceNodes())         // 8: bucket 0 leads again
	if u, ok := h.s.ChangesFor(6, other, 0); !ok || len(u) != 1 || u[0].GetIndex() != 8 || !isEmptyUpdate(u[0]) {
		t.Fatalf("ChangesFor(6, %d) = %v, %v; want the newest update, empty", other, u, ok)
	}
	h.ok(dropTable("db", "t", false)) // 9

	indexes := func(us []*pb.MetadataUpdate) []uint64 {
		var out []uint64
		for _, u := range us {
			out = append(out, u.GetIndex())
		}
		return out
	}
	all, _ := h.s.Changes(4)
	if got := indexes(all); !slices.Equal(got, []uint64{5, 7, 8, 9}) {
		t.Fatalf("Changes(4) at %v", got)
	}
	for _, tc := range []struct {
		name  string
		after uint64
		node  uint32
		want  []uint64
	}{
		{"the owner sees its bucket change", 4, owner, []uint64{5, 7, 8, 9}},
		{"another node: the table and its drop", 4, other, []uint64{5, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := h.s.ChangesFor(tc.after, tc.node, 0)
			if !ok || !slices.Equal(indexes(got), tc.want) {
				t.Fatalf("ChangesFor(%d, %d) at %v, %v; want %v", tc.after, tc.node, indexes(got), ok, tc.want)
			}
			for _, u := range got {
				want := imageForNode(&pb.MetadataUpdate{Buckets: all[slices.IndexFunc(all, func(a *pb.MetadataUpdate) bool {
					return a.GetIndex() == u.GetIndex()
				})].GetBuckets()}, tc.node).GetBuckets()
				if !slices.EqualFunc(u.GetBuckets(), want, func(a, b *pb.BucketRecord) bool { return proto.Equal(a, b) }) {
					t.Fatalf("update %d carries buckets %v, want %v", u.GetIndex(), u.GetBuckets(), want)
				}
			}
		})
	}
	t.Run("byte bound", func(t *testing.T) {
		first := proto.Size(all[0])
		for _, tc := range []struct {
			maxBytes int
			want     []uint64
		}{{1, []uint64{5}}, {first, []uint64{5}}, {first + 1, []uint64{5, 7}}, {0, []uint64{5, 7, 8, 9}}} {
			got, ok := h.s.ChangesFor(4, 0, tc.maxBytes)
			if !ok || !slices.Equal(indexes(got), tc.want) {
				t.Errorf("ChangesFor(4, 0, %d) at %v, %v; want %v", tc.maxBytes, indexes(got), ok, tc.want)
			}
		}
	})
}

// TestImageFor: the image for a node is the full image with only the
// buckets the node holds, at the same index, with or without the bucket
// index built, and after a Restore.
func TestImageFor(t *testing.T) {
	h := newHarness(t)
	h.tabletNodes(4)
	h.ok(createDB("db"))
	for i, replication := range []int32{2, 3} {
		h.ok(createTable(ordersTable("db", fmt.Sprint("t", i), func(c *pb.CreateTable) { c.Buckets, c.Replication = 5, replication })))
	}
	check := func(when string) {
		t.Helper()
		full, err := h.s.Image()
		if err != nil {
			t.Fatal(err)
		}
		for node := uint32(0); node <= 5; node++ {
			got, err := h.s.ImageFor(node)
			if err != nil {
				t.Fatal(err)
			}
			want := full
			if node != 0 {
				want = imageForNode(full, node)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("%s: ImageFor(%d) = %v, want %v", when, node, got, want)
			}
		}
	}
	check("index built by the commands")
	h.s.applyMu.Lock()
	h.s.index = nil
	h.s.applyMu.Unlock()
	check("index built by ImageFor")
	checkIndex(t, h.s)
	h.ok(dropTable("db", "t0", false))
	check("after a drop")
	snap := snapshotOf(t, h.s)
	if err := h.s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	check("after a restore")
}
