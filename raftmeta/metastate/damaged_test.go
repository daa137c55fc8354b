package metastate

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/floedb/floe/transport/pb"
)

func reportDamaged(node uint32, nodeEpoch uint64) *pb.Command {
	return &pb.Command{Op: &pb.Command_ReportDamagedReplica{ReportDamagedReplica: &pb.ReportDamagedReplica{
		TableId: 1, Bucket: 0, NodeId: node, NodeEpoch: nodeEpoch, Offset: 40, Reason: "checksum"}}}
}

// TestReportDamagedReplica: a replica that found damage in its log leaves
// the ISR and, if it led, its leadership, with both epochs raised, as a
// lost replica does. The ISR's last member stays (it holds the only copy
// of what was acknowledged after the damage), unless what it reports is a
// lost tail: then it leaves too, taking the bucket offline until an
// unclean election. A report from an earlier registration of the node is
// FENCED, a replica already out of the ISR changes nothing.
func TestReportDamagedReplica(t *testing.T) {
	h := incarnationFixture(t, 1)
	epochOf := func(id uint32) uint64 {
		img, err := h.s.Image()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range img.GetNodes() {
			if n.GetId() == id {
				return n.GetNodeEpoch()
			}
		}
		t.Fatalf("node %d not registered", id)
		return 0
	}
	setBucket(t, h.s, bk([]uint32{1, 2, 3}, 1, []uint32{1, 2, 3}, 4, 7))

	wantRefused(t, h.apply(reportDamaged(1, epochOf(1)-1)), pb.ErrorCode_ERROR_CODE_FENCED, "node epoch")
	wantRefused(t, h.apply(reportDamaged(9, 1)), pb.ErrorCode_ERROR_CODE_INVALID_REQUEST, "not registered")

	res := h.ok(reportDamaged(1, epochOf(1)))
	want := bk([]uint32{1, 2, 3}, 2, []uint32{2, 3}, 5, 8)
	if b := h.bucket(1, 0); !proto.Equal(b, want) || !proto.Equal(res.GetBucket(), want) {
		t.Fatalf("after the leader reported damage: %v (result %v), want %v", b, res.GetBucket(), want)
	}
	if res := h.ok(reportDamaged(1, epochOf(1))); !res.GetUnchanged() {
		t.Fatalf("a second report changed the bucket: %v", res)
	}
	h.ok(reportDamaged(3, epochOf(3)))
	want = bk([]uint32{1, 2, 3}, 2, []uint32{2}, 5, 9)
	if res := h.ok(reportDamaged(2, epochOf(2))); !res.GetUnchanged() || !proto.Equal(h.bucket(1, 0), want) {
		t.Fatalf("after the last in-sync replica reported damage: %v (unchanged %v), want %v unchanged",
			h.bucket(1, 0), res.GetUnchanged(), want)
	}
	lostTail := reportDamaged(2, epochOf(2))
	lostTail.GetReportDamagedReplica().LostTail = true
	h.ok(lostTail)
	want = bk([]uint32{1, 2, 3}, 0, nil, 6, 10)
	if b := h.bucket(1, 0); !proto.Equal(b, want) {
		t.Fatalf("after the last in-sync replica reported a lost tail: %v, want %v", b, want)
	}
}
